//! The HTTP executor: one authorized request, sent exactly as authorized.
//!
//! Decisions, in the order a request meets them:
//!
//! - **Where it goes.** The authorized `http::Uri`, sent as is: authorization
//!   parsed it with this client's URI type and held its scheme, host, port,
//!   path and query to the policy, so nothing here re-reads or converts it.
//!   No proxy is ever used (the
//!   agent ignores `HTTP_PROXY`/`ALL_PROXY`/...), since a proxy would change
//!   where the connection goes. Connections are not pooled: each call opens
//!   exactly one connection of its own.
//! - **What is sent.** The method of the policy; `Authorization: Bearer …`
//!   when the tool has a credential (marked sensitive); no cookies (the
//!   `cookies` feature is off); no body (POST/PUT/PATCH send
//!   `Content-Length: 0`); no `Accept-Encoding` (no decompression).
//! - **Redirects are never followed.** A 3xx is the result:
//!   `HTTP 302 Found, Location: … (redirect not followed)`, `is_error: false`.
//!   Following one would send the request to a target nobody authorized.
//! - **Time.** `action.timeout()` is the global budget for connect, request,
//!   response head and body together.
//! - **Size.** At most `max_response_bytes` of the body are kept: the
//!   executor reads `cap + 1` bytes at most and then drops the connection.
//!   An over-long body is not an error by itself: the result carries the
//!   first `cap` bytes and the line
//!   `[response body truncated at N bytes]`, and `is_error` follows the
//!   status.
//! - **Result text.** 2xx: the body (or `HTTP 204 No Content (empty body)`
//!   when there is none). 3xx: the status line and `Location`. 4xx/5xx:
//!   `HTTP <code> <reason>` and the body on the following lines, with
//!   `is_error: true`. A body that is not UTF-8 is reported as
//!   `<N bytes of binary content>`, never decoded lossily.
//! - **Failures.** Transport errors and timeouts give `is_error: true`.
//! - **The credential never comes back.** An upstream may reflect the
//!   `Authorization` header it received: in a body (an echo service, an
//!   error page), in a `Location`. Every outcome, success or failure, passes
//!   at the single exit of [`HttpExecutor`] through a
//!   [`Scrubber`](crate::scrub::Scrubber) for the tool's credential, which
//!   replaces it in any of its spellings by `[redacted]`; a body cut at
//!   `max_response_bytes` in the middle of the credential loses the prefix
//!   at the cut as well (see [`crate::scrub`]).

use std::fmt;
use std::time::{Duration, Instant};

use portcullis_gateway::policy::HttpMethod;
use portcullis_gateway::{ActionTarget, AuthorizedAction, Executor, HttpRequest, Outcome};
use thiserror::Error;
use ureq::http;

use crate::fmt_duration;
use crate::output::{Overflow, read_capped, text_of};
use crate::scrub::Scrubber;

/// Why a request could not produce a response.
#[derive(Debug, Error)]
#[non_exhaustive]
pub(crate) enum HttpError {
    /// The request could not be assembled from its parts.
    #[error("the authorized URL cannot be sent: {0}")]
    Build(#[source] http::Error),
    /// The credential cannot be carried in a header (e.g. it holds a line
    /// break). The value is never part of the message.
    #[error("the credential is not a valid HTTP header value")]
    Credential,
    /// The action's time budget ran out.
    #[error("HTTP request timed out after {}", fmt_duration(*.0))]
    Timeout(Duration),
    /// Connecting, sending or receiving failed.
    #[error("HTTP request failed: {0}")]
    Transport(#[source] ureq::Error),
}

/// Sends authorized HTTP requests with `ureq`.
#[derive(Clone)]
pub struct HttpExecutor {
    agent: ureq::Agent,
}

impl fmt::Debug for HttpExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpExecutor").finish_non_exhaustive()
    }
}

impl Default for HttpExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpExecutor {
    /// An executor with the boundary's fixed client settings (see the
    /// module docs): no proxy, no redirects, no pooling, no cookies.
    pub fn new() -> Self {
        let config = ureq::Agent::config_builder()
            // A proxy would change where the connection goes.
            .proxy(None)
            .max_redirects(0)
            // Statuses are results, not errors: read 4xx/5xx bodies.
            .http_status_as_error(false)
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .user_agent(concat!("portcullis/", env!("CARGO_PKG_VERSION")))
            .build();
        Self {
            agent: ureq::Agent::new_with_config(config),
        }
    }

    fn send(&self, action: &AuthorizedAction, req: &HttpRequest) -> Outcome {
        let started = Instant::now();
        let scrubber = Scrubber::new(action.credential().map(|s| s.expose()));
        let result = self.exchange(action, req, &scrubber);
        let elapsed = started.elapsed();
        let (outcome, failed) = match result {
            Ok(outcome) => (outcome, false),
            Err(err) => (Outcome::failure(err.to_string()), true),
        };
        // The single exit: nothing leaves the executor unscrubbed.
        let outcome = scrubber.scrub_outcome(outcome);
        if failed {
            tracing::warn!(
                tool = action.tool(),
                host = req.host(),
                port = req.port(),
                elapsed_ms = elapsed.as_millis() as u64,
                error = %outcome.text,
                "http action failed"
            );
        } else {
            tracing::info!(
                tool = action.tool(),
                host = req.host(),
                port = req.port(),
                is_error = outcome.is_error,
                elapsed_ms = elapsed.as_millis() as u64,
                "http action finished"
            );
        }
        outcome
    }

    fn exchange(
        &self,
        action: &AuthorizedAction,
        req: &HttpRequest,
        scrubber: &Scrubber,
    ) -> Result<Outcome, HttpError> {
        let uri = req.uri().clone();
        let (method, has_body) = match req.method() {
            HttpMethod::Get => (http::Method::GET, false),
            HttpMethod::Head => (http::Method::HEAD, false),
            HttpMethod::Delete => (http::Method::DELETE, false),
            HttpMethod::Post => (http::Method::POST, true),
            HttpMethod::Put => (http::Method::PUT, true),
            HttpMethod::Patch => (http::Method::PATCH, true),
        };
        let mut builder = http::Request::builder().method(method).uri(uri);
        if let Some(secret) = action.credential() {
            let mut value = http::HeaderValue::try_from(format!("Bearer {}", secret.expose()))
                .map_err(|_| HttpError::Credential)?;
            value.set_sensitive(true);
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        let timeout = action.timeout();
        let response = if has_body {
            let request = builder.body(&[][..]).map_err(HttpError::Build)?;
            self.run(request, timeout)
        } else {
            let request = builder.body(()).map_err(HttpError::Build)?;
            self.run(request, timeout)
        }
        .map_err(|e| classify(e, timeout))?;
        let status = response.status();
        let location = response
            .headers()
            .get(http::header::LOCATION)
            .map(|v| v.to_str().unwrap_or("<not text>").to_owned());
        let reader = response.into_body().into_reader();
        let cap = req.max_response_bytes();
        let body = read_capped(reader, cap, Overflow::Stop)
            .map_err(|(e, _partial)| classify(ureq::Error::from(e), timeout))?;
        Ok(render(
            status,
            location.as_deref(),
            &body.bytes,
            body.truncated,
            cap,
            scrubber,
        ))
    }

    fn run<S: ureq::AsSendBody>(
        &self,
        request: http::Request<S>,
        timeout: Duration,
    ) -> Result<http::Response<ureq::Body>, ureq::Error> {
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(Some(timeout))
            .build();
        self.agent.run(request)
    }
}

impl Executor for HttpExecutor {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        match action.target() {
            ActionTarget::Http(req) => self.send(action, req),
            ActionTarget::Ssh(_) => {
                Outcome::failure("internal: the HTTP executor was handed an SSH action")
            }
        }
    }
}

fn classify(err: ureq::Error, timeout: Duration) -> HttpError {
    match err {
        ureq::Error::Timeout(_) => HttpError::Timeout(timeout),
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            HttpError::Timeout(timeout)
        }
        other => HttpError::Transport(other),
    }
}

fn status_line(status: http::StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

fn render(
    status: http::StatusCode,
    location: Option<&str>,
    body: &[u8],
    truncated: bool,
    cap: usize,
    scrubber: &Scrubber,
) -> Outcome {
    let line = status_line(status);
    let body_text = || {
        let text = text_of(body, truncated);
        // The cap may have cut the body inside a reflected credential: the
        // prefix left at the cut is redacted here, where the cut is known.
        if truncated {
            scrubber.scrub_cut(&text)
        } else {
            text
        }
    };
    let mut text = if status.is_redirection() {
        match location {
            Some(loc) => format!("{line}, Location: {loc} (redirect not followed)"),
            None => format!("{line} (redirect not followed)"),
        }
    } else if status.is_success() {
        if body.is_empty() {
            format!("{line} (empty body)")
        } else {
            body_text()
        }
    } else if body.is_empty() {
        line
    } else {
        format!("{line}\n{}", body_text())
    };
    if truncated && !status.is_redirection() {
        text.push_str(&format!("\n[response body truncated at {cap} bytes]"));
    }
    Outcome {
        text,
        is_error: status.as_u16() >= 400,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_settings() {
        let executor = HttpExecutor::new();
        let config = executor.agent.config();
        assert!(config.proxy().is_none());
        assert_eq!(config.max_redirects(), 0);
        assert!(!config.http_status_as_error());
        assert_eq!(config.max_idle_connections(), 0);
    }

    /// A socket read that times out is the action's timeout, whichever
    /// way ureq reports it; any other I/O failure is a transport error.
    #[test]
    fn an_io_timeout_is_the_actions_timeout() {
        let budget = Duration::from_millis(1500);
        let timed_out = ureq::Error::Io(std::io::ErrorKind::TimedOut.into());
        assert_eq!(
            classify(timed_out, budget).to_string(),
            "HTTP request timed out after 1500ms"
        );
        let reset = ureq::Error::Io(std::io::ErrorKind::ConnectionReset.into());
        let reset = classify(reset, budget);
        assert!(matches!(reset, HttpError::Transport(_)), "{reset}");
    }

    #[test]
    fn debug_names_the_executor_and_nothing_else() {
        assert_eq!(format!("{:?}", HttpExecutor::new()), "HttpExecutor { .. }");
    }

    #[test]
    fn rendering() {
        let none = Scrubber::new(None);
        let ok = render(http::StatusCode::OK, None, b"hi", false, 10, &none);
        assert_eq!(ok, Outcome::success("hi"));
        let moved = render(
            http::StatusCode::FOUND,
            Some("/elsewhere"),
            b"",
            false,
            10,
            &none,
        );
        assert_eq!(
            moved,
            Outcome::success("HTTP 302 Found, Location: /elsewhere (redirect not followed)")
        );
        let failed = render(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            None,
            b"boom",
            false,
            10,
            &none,
        );
        assert_eq!(
            failed,
            Outcome::failure("HTTP 500 Internal Server Error\nboom")
        );
        let cut = render(http::StatusCode::OK, None, b"0123456789", true, 10, &none);
        assert_eq!(
            cut,
            Outcome::success("0123456789\n[response body truncated at 10 bytes]")
        );
        let binary = render(http::StatusCode::OK, None, &[0xff, 0xfe], false, 10, &none);
        assert_eq!(binary, Outcome::success("<2 bytes of binary content>"));
    }

    #[test]
    fn a_body_cut_inside_the_credential_keeps_no_prefix_of_it() {
        let scrubber = Scrubber::new(Some("tok-0123456789"));
        let cut = render(
            http::StatusCode::OK,
            None,
            b"Authorization: Bearer tok-01234",
            true,
            31,
            &scrubber,
        );
        assert_eq!(
            cut,
            Outcome::success(
                "Authorization: Bearer [redacted]\n[response body truncated at 31 bytes]"
            )
        );
    }
}
