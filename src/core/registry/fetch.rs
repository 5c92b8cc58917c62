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
    loop {
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
