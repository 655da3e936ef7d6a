//! [`ScriptedHttp`]: a loopback HTTP server that answers every connection
//! the same scripted way (a response, a response then silence, nothing at
//! all, or bytes before the request), for the executor's HTTP tests.

use std::io::Write;
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::read_request_head;

/// What the fake server does with each connection.
#[derive(Debug)]
pub enum Reply {
    /// Write these bytes, then close.
    Close(Vec<u8>),
    /// Write these bytes, then keep the connection open and idle.
    Hold(Vec<u8>),
    /// Accept, read the request, never answer.
    Silent,
    /// Write these bytes at once without reading anything, then close.
    Blurt(Vec<u8>),
}

/// A one-response-per-connection HTTP server. It counts connections and
/// keeps each request head.
#[derive(Debug)]
pub struct ScriptedHttp {
    /// The loopback port it listens on.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl ScriptedHttp {
    /// Listen on a free loopback port and answer every connection with
    /// `reply(port)`, on a thread of its own.
    pub fn start(reply: impl FnOnce(u16) -> Reply) -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let reply = reply(port);
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (c, h) = (connections.clone(), heads.clone());
        std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                if let Reply::Blurt(bytes) = &reply {
                    let _ = stream.write_all(bytes);
                    h.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(String::new());
                    continue;
                }
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let head = read_request_head(&mut stream);
                h.lock().unwrap_or_else(PoisonError::into_inner).push(head);
                match &reply {
                    Reply::Close(bytes) => {
                        let _ = stream.write_all(bytes);
                        let _ = stream.flush();
                        let _ = stream.shutdown(Shutdown::Write);
                    }
                    Reply::Hold(bytes) => {
                        let _ = stream.write_all(bytes);
                        let _ = stream.flush();
                        held.push(stream);
                    }
                    Reply::Silent => held.push(stream),
                    Reply::Blurt(_) => {}
                }
            }
        });
        Self {
            port,
            connections,
            heads,
        }
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The head of the `i`-th request (empty for a [`Reply::Blurt`]).
    pub fn head(&self, i: usize) -> String {
        self.heads.lock().unwrap_or_else(PoisonError::into_inner)[i].clone()
    }
}

/// An HTTP/1.1 response with a `Content-Length`, `headers` and
/// `Connection: close`.
pub fn response(status: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}
