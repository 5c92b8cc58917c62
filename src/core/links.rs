//! Web addresses Parley opens for an agent (a URL elicitation, a link in
//! its text): read with a real URL parser (GLib's `GUri`), never by a
//! prefix. An address with a control character or white space anywhere is
//! refused: a dialog shows its first line, while a browser, which strips
//! tabs and line breaks, opens what follows (`https://accounts.google.com`,
//! 200 line breaks, `.evil.example/login`). So is one with user
//! information (`https://github.com@evil.example`), whose host is not what
//! it reads as.

/// A web address that may be opened: exactly `url`, which leads to `host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebUrl {
    /// The address as parsed and written again: what is opened.
    pub url: String,
    /// Where it leads, lower-case: what the user is shown first.
    pub host: String,
}

/// Characters that change how text is drawn without being seen: bidi
/// controls (`U+202E` turns `exe.jpg` around), zero-width ones.
fn invisible(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` as an http(s) address that may be opened, or why not.
pub fn web_url(text: &str) -> Result<WebUrl, String> {
    use crate::i18n::gettext;
    if text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || invisible(c))
    {
        return Err(gettext("the address holds a control character or white space"));
    }
    let uri = glib::Uri::parse(text, glib::UriFlags::NONE).map_err(|e| {
        crate::i18n::gettext_f("the address cannot be read: {error}", &[("error", e.message())])
    })?;
    let scheme = uri.scheme().to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return Err(gettext("the address is not a web address (http or https)"));
    }
    if uri.userinfo().is_some() {
        return Err(gettext(
            "the address holds a user name or password before its host",
        ));
    }
    let host = uri
        .host()
        .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| gettext("the address has no host"))?;
    Ok(WebUrl {
        url: uri.to_str().to_string(),
        host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_parsed_and_opened_as_parsed() {
        let u = web_url("https://Accounts.Google.com/o/oauth2?x=1#y").expect("a web address");
        assert_eq!(u.host, "accounts.google.com");
        assert!(
            u.url.starts_with("https://") && u.url.contains("/o/oauth2?x=1#y"),
            "{}",
            u.url
        );
        assert_eq!(
            web_url("http://127.0.0.1:8080/cb").expect("loopback").host,
            "127.0.0.1"
        );
    }

    #[test]
    fn tricks_are_refused() {
        let newlines = format!(
            "https://accounts.google.com{}.evil.example/login",
            "\n".repeat(200)
        );
        for bad in [
            newlines.as_str(),
            "https://accounts.google.com\t.evil.example/",
            "https://accounts.google.com .evil.example/",
            "https://accounts.google.com@evil.example/login",
            "https://user:pass@evil.example/",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https:///nohost",
            "https://exa\u{0}mple.com/",
            "https://example.com/\u{202E}gpj.exe",
            "",
        ] {
            assert!(web_url(bad).is_err(), "{bad:?} was taken");
        }
    }
}
