//! [`FakeHttp`]: a loopback HTTP service that answers every request with
//! `status ok for <path>`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A loopback HTTP service that counts TCP connections and keeps each
/// request head. Paths starting with `/slow` are answered after
/// `slow_delay`. When `observe` is set, the file is read at every accepted
/// connection (to prove what was on disk before the request arrived).
#[derive(Debug)]
pub struct FakeHttp {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
    observed: Arc<Mutex<Vec<String>>>,
    gauge: Arc<Gauge>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// Connections being served now, and the most ever at once.
#[derive(Debug, Default)]
struct Gauge {
    active: AtomicUsize,
    peak: AtomicUsize,
}

impl FakeHttp {
    /// Slow paths wait 800 ms; nothing is observed.
    pub fn start() -> Self {
        Self::with(Duration::from_millis(800), None)
    }

    /// Slow paths wait `slow_delay`; `observe` is read at every connection.
    pub fn with(slow_delay: Duration, observe: Option<PathBuf>) -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let observed = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let gauge = Arc::new(Gauge::default());
        let accept = {
            let (connections, requests, observed, stop, gauge) = (
                Arc::clone(&connections),
                Arc::clone(&requests),
                Arc::clone(&observed),
                Arc::clone(&stop),
                Arc::clone(&gauge),
            );
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    connections.fetch_add(1, Ordering::SeqCst);
                    if let Some(path) = &observe {
                        let text = std::fs::read_to_string(path).unwrap_or_default();
                        observed
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(text);
                    }
                    let requests = Arc::clone(&requests);
                    let gauge = Arc::clone(&gauge);
                    thread::spawn(move || {
                        let now = gauge.active.fetch_add(1, Ordering::SeqCst) + 1;
                        gauge.peak.fetch_max(now, Ordering::SeqCst);
                        serve(stream, &requests, slow_delay);
                        gauge.active.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            })
        };
        Self {
            port,
            connections,
            requests,
            observed,
            gauge,
            stop,
            accept: Some(accept),
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Request heads received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The most connections served at the same time.
    pub fn peak_concurrency(&self) -> usize {
        self.gauge.peak.load(Ordering::SeqCst)
    }

    /// The observed file's contents at each connection.
    pub fn observed(&self) -> Vec<String> {
        self.observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(mut stream: TcpStream, requests: &Mutex<Vec<String>>, slow_delay: Duration) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(head);
    if path.starts_with("/slow") {
        thread::sleep(slow_delay);
    }
    let body = format!("status ok for {path}");
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
}
