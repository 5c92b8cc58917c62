//! Downloads over HTTPS with libsoup 3, synchronously, on a thread of the
//! caller's (tokio's blocking pool): a session of its own per download, so
//! nothing is shared with the GTK main thread. libsoup uses the desktop's
//! proxy settings and glib-networking's TLS.

use std::io::Write;

use gio::prelude::*;
use soup::prelude::*;

use crate::i18n::gettext_f;

/// Seconds without progress before a download is given up.
pub const TIMEOUT_SECS: u32 = 20;

const MAX_REDIRECTS: usize = 8;

/// How fast a download must go: libsoup's timeout only sees a connection
/// that says nothing, and a server that trickles a byte every few seconds
/// would hold `registry add` for good.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Time every download has, whatever its size...
    pub base: std::time::Duration,
    /// ...plus its size at this many bytes a second: its deadline.
    pub deadline_rate: u64,
    /// Past `base`, the download so far must average at least this.
    pub min_rate: u64,
}

impl Pace {
    pub const STANDARD: Pace = Pace {
        base: std::time::Duration::from_secs(30),
        deadline_rate: 64 * 1024,
        min_rate: 4 * 1024,
    };
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    #[error("{0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
}

/// Only HTTPS; plain HTTP to this machine alone (a test's server). The
/// address is parsed as libsoup will (a `user@host` part included).
pub fn allowed(url: &str) -> bool {
    let Ok(uri) = glib::Uri::parse(url, glib::UriFlags::NONE) else {
        return false;
    };
    let host = uri.host().map(|h| h.to_ascii_lowercase()).unwrap_or_default();
    match uri.scheme().as_str() {
        "https" => !host.is_empty(),
        "http" => uri.userinfo().is_none() && matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1"),
        _ => false,
    }
}

/// Gets `url` into `sink`, at most `limit` bytes, telling `progress` (bytes
/// so far, the announced length). Stops with [`FetchError::Cancelled`] when
/// `cancel` is cancelled; a partial body is the caller's to throw away.
pub fn get(
    url: &str,
    limit: u64,
    cancel: &gio::Cancellable,
    sink: &mut dyn Write,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<u64, FetchError> {
    get_paced(url, limit, &Pace::STANDARD, cancel, sink, progress)
}

/// [`get`], at `pace`.
pub fn get_paced(
    url: &str,
    limit: u64,
    pace: &Pace,
    cancel: &gio::Cancellable,
    sink: &mut dyn Write,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<u64, FetchError> {
    let started = std::time::Instant::now();
    let failed = |error: &str| {
        FetchError::Failed(gettext_f(
            "cannot download {url}: {error}",
            &[("url", url), ("error", error)],
        ))
    };
    if !allowed(url) {
        return Err(failed(&crate::i18n::gettext(
            "only https:// addresses are fetched",
        )));
    }
    let session = soup::Session::new();
    session.set_timeout(TIMEOUT_SECS);
    session.set_user_agent(concat!("Parley/", env!("CARGO_PKG_VERSION"), " "));
    // Redirects are followed here, not by libsoup, so that every hop is
    // checked before it is asked (GitHub's downloads redirect once or twice).
    let mut at = url.to_owned();
    let (message, stream) = 'hops: {
        for _ in 0..MAX_REDIRECTS {
            let message = soup::Message::new("GET", &at).map_err(|e| failed(&e.to_string()))?;
            message.set_flags(soup::MessageFlags::NO_REDIRECT);
            let stream = session.send(&message, Some(cancel)).map_err(|e| {
                if cancel.is_cancelled() {
                    FetchError::Cancelled
                } else {
                    failed(e.message())
                }
            })?;
            let status = glib::translate::IntoGlib::into_glib(message.status());
            let location = message.response_headers().and_then(|h| h.one("Location"));
            match location {
                Some(next) if (300..400).contains(&status) => {
                    let _ = stream.close(None::<&gio::Cancellable>);
                    let base =
                        glib::Uri::parse(&at, glib::UriFlags::NONE).map_err(|e| failed(e.message()))?;
                    let next = base
                        .parse_relative(&next, glib::UriFlags::NONE)
                        .map_err(|e| failed(e.message()))?
                        .to_str()
                        .to_string();
                    if !allowed(&next) {
                        return Err(failed(&gettext_f(
                            "it was redirected to {url}, which is not https://",
                            &[("url", &next)],
                        )));
                    }
                    at = next;
                }
                _ => break 'hops (message, stream),
            }
        }
        return Err(failed(&crate::i18n::gettext("too many redirects")));
    };
    let status = glib::translate::IntoGlib::into_glib(message.status());
    if !(200..300).contains(&status) {
        let reason = message.reason_phrase().map(|r| r.to_string()).unwrap_or_default();
        return Err(failed(format!("HTTP {status} {reason}").trim_end()));
    }
    let announced = message
        .response_headers()
        .map(|h| h.content_length())
        .filter(|n| *n > 0)
        .map(|n| n as u64);
    let too_big = || {
        failed(&gettext_f(
            "it is larger than {limit}",
            &[("limit", glib::format_size(limit).as_ref())],
        ))
    };
    if announced.is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    progress(0, announced);
    // Each read returns within libsoup's timeout, so these checks between
    // reads end a trickle at most that much late.
    let size = announced.unwrap_or(limit);
    let deadline = pace.base + std::time::Duration::from_secs(size / pace.deadline_rate.max(1));
    loop {
        let elapsed = started.elapsed();
        if elapsed > deadline {
            return Err(failed(&gettext_f(
                "it took longer than {n} seconds",
                &[("n", &deadline.as_secs().to_string())],
            )));
        }
        if elapsed > pace.base && (total as f64) < pace.min_rate as f64 * elapsed.as_secs_f64() {
            return Err(failed(&gettext_f(
                "it is too slow (under {rate} a second)",
                &[("rate", glib::format_size(pace.min_rate).as_ref())],
            )));
        }
        let n = stream.read(&mut buf[..], Some(cancel)).map_err(|e| {
            if cancel.is_cancelled() {
                FetchError::Cancelled
            } else {
                failed(e.message())
            }
        })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limit {
            return Err(too_big());
        }
        sink.write_all(&buf[..n]).map_err(|e| failed(&e.to_string()))?;
        progress(total, announced);
    }
    let _ = stream.close(None::<&gio::Cancellable>);
    if announced.is_some_and(|n| n != total) {
        return Err(failed(&crate::i18n::gettext("the download ended early")));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that trickles a byte at a time is given up, saying so.
    #[test]
    fn a_trickle_is_given_up() {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            if let Ok((stream, _)) = listener.accept() {
                let mut reader = std::io::BufReader::new(&stream);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let mut out = &stream;
                let _ =
                    out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n");
                for _ in 0..200 {
                    if out.write_all(b"x").is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        });
        let pace = Pace {
            base: std::time::Duration::from_millis(500),
            // A deadline far off: the rate gives up first.
            deadline_rate: 10,
            min_rate: 1024,
        };
        let mut sink = Vec::new();
        let got = get_paced(
            &format!("http://127.0.0.1:{port}/agent.tar.gz"),
            1 << 20,
            &pace,
            &gio::Cancellable::new(),
            &mut sink,
            &mut |_, _| {},
        );
        match got {
            Err(FetchError::Failed(why)) => assert!(why.contains("too slow"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(sink.len() < 200, "it read the whole trickle");
    }

    #[test]
    fn only_https_or_this_machine() {
        assert!(allowed("https://cdn.example/registry.json"));
        assert!(allowed("http://127.0.0.1:8080/r.json"));
        assert!(allowed("http://localhost/r.json"));
        assert!(!allowed("http://example.org/r.json"));
        assert!(!allowed("http://127.0.0.1.example.org/r.json"));
        assert!(!allowed("http://127.0.0.1:80@evil.example/r.json"));
        assert!(!allowed("http://localhost@evil.example/r.json"));
        assert!(allowed("http://[::1]:8080/r.json"));
        assert!(!allowed("file:///etc/passwd"));
        assert!(!allowed("ftp://x/y"));
    }
}
