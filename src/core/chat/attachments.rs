//! Files and images attached to a message, and the prompt's content blocks.
//! A file goes as a `resource_link` (every agent takes one), or embedded
//! when the agent takes embedded context and the file is small text; an
//! image goes as `image` content, only to an agent that takes images.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use base64::Engine;

use super::state::MAX_ATTACHMENT_BYTES;
use crate::core::types::message::{Attachment, AttachmentKind, Message, Part};
use crate::i18n::gettext_f;

/// Text files up to this size are embedded where the agent takes it.
const MAX_EMBEDDED_BYTES: u64 = 256 * 1024;

/// What a front end attaches.
#[derive(Debug, Clone)]
pub enum AttachmentInput {
    /// A file on disk (chosen, dropped or pasted).
    File(PathBuf),
    /// A file `@`-mentioned: always a `resource_link`.
    Mention(PathBuf),
    /// Image bytes without a file (a pasted screenshot).
    Image {
        name: String,
        mime_type: String,
        data: Vec<u8>,
    },
}

/// The MIME type of a picture file Parley sends as an image, by its name.
pub fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

fn text_mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "md" => "text/markdown",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "json" => "application/json",
        "html" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "toml" => "application/toml",
        "c" | "h" => "text/x-c",
        _ => "text/plain",
    }
}

/// `file://` URI of an absolute path, percent-encoded.
pub fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn too_large(name: &str, size: u64) -> String {
    gettext_f(
        "{name} is {size}; attachments are limited to {limit}",
        &[
            ("name", name),
            ("size", &mebibytes(size)),
            ("limit", &format!("{} MiB", MAX_ATTACHMENT_BYTES >> 20)),
        ],
    )
}

/// Rounded up, so a file just over the limit does not read as the limit.
fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", (bytes as f64 / 1_048_576.0 * 10.0).ceil() / 10.0)
}

fn no_images(name: &str) -> String {
    gettext_f(
        "{name} is an image, and this agent does not take images",
        &[("name", name)],
    )
}

/// Reads what is attached, checks it against the limits and what the agent
/// takes (`None`: not known yet; the turn checks again), and says how it
/// will be sent.
pub(super) fn prepare(
    input: AttachmentInput,
    caps: Option<&acp::PromptCapabilities>,
) -> Result<Attachment, String> {
    match input {
        AttachmentInput::Image {
            name,
            mime_type,
            data,
        } => {
            let name = crate::core::types::options::shown_text(&name, 200);
            if data.len() as u64 > MAX_ATTACHMENT_BYTES {
                return Err(too_large(&name, data.len() as u64));
            }
            if caps.is_some_and(|c| !c.image) {
                return Err(no_images(&name));
            }
            if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&mime_type.as_str()) {
                return Err(gettext_f("{name} is not an image", &[("name", &name)]));
            }
            Ok(Attachment {
                name,
                uri: String::new(),
                mime_type,
                size: data.len() as u64,
                sent_as: AttachmentKind::Image,
                content: Some(Arc::from(data)),
            })
        }
        AttachmentInput::Mention(path) => {
            // Checked as a file (it exists, is within the limit), never
            // read: an image too goes as a link, which any agent takes.
            let path = std::fs::canonicalize(&path).map_err(|e| {
                gettext_f(
                    "cannot attach {name}: {error}",
                    &[("name", &display_name(&path)), ("error", &e.to_string())],
                )
            })?;
            check_file(&path, None)?;
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            Ok(Attachment {
                name: display_name(&path),
                uri: file_uri(&path),
                mime_type: image_mime(&path).unwrap_or_else(|| text_mime(&path)).to_owned(),
                size,
                sent_as: AttachmentKind::Link,
                content: None,
            })
        }
        AttachmentInput::File(path) => {
            let name = display_name(&path);
            let cant = |e: std::io::Error| {
                gettext_f(
                    "cannot attach {name}: {error}",
                    &[("name", &name), ("error", &e.to_string())],
                )
            };
            let path = std::fs::canonicalize(&path).map_err(cant)?;
            let meta = std::fs::metadata(&path).map_err(cant)?;
            if !meta.is_file() {
                return Err(gettext_f("{name} is not a regular file", &[("name", &name)]));
            }
            if meta.len() > MAX_ATTACHMENT_BYTES {
                return Err(too_large(&name, meta.len()));
            }
            let uri = file_uri(&path);
            if let Some(mime) = image_mime(&path) {
                if caps.is_some_and(|c| !c.image) {
                    return Err(no_images(&name));
                }
                let data = read_at_most(&path, MAX_ATTACHMENT_BYTES).map_err(cant)?;
                return Ok(Attachment {
                    name,
                    uri,
                    mime_type: mime.to_owned(),
                    size: data.len() as u64,
                    sent_as: AttachmentKind::Image,
                    content: Some(Arc::from(data)),
                });
            }
            let mime = text_mime(&path).to_owned();
            let embed = caps.is_some_and(|c| c.embedded_context) && meta.len() <= MAX_EMBEDDED_BYTES;
            if embed {
                let data = read_at_most(&path, MAX_EMBEDDED_BYTES).map_err(cant)?;
                // Only text is embedded; anything else goes as a link.
                if std::str::from_utf8(&data).is_ok() && !data.contains(&0) {
                    return Ok(Attachment {
                        name,
                        uri,
                        mime_type: mime,
                        size: data.len() as u64,
                        sent_as: AttachmentKind::Embedded,
                        content: Some(Arc::from(data)),
                    });
                }
            }
            Ok(Attachment {
                name,
                uri,
                mime_type: mime,
                size: meta.len(),
                sent_as: AttachmentKind::Link,
                content: None,
            })
        }
    }
}

/// A file's name as shown: no control characters, bounded.
fn display_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    crate::core::types::options::shown_text(&name, 200)
}

/// The quick check of a file as it is attached in the window (a stat, no
/// reading): it exists, is a regular file within the limit, and is not an
/// image for an agent known to take none.
pub fn check_file(path: &Path, caps: Option<&acp::PromptCapabilities>) -> Result<(), String> {
    let name = display_name(path);
    let meta = std::fs::metadata(path).map_err(|e| {
        gettext_f(
            "cannot attach {name}: {error}",
            &[("name", &name), ("error", &e.to_string())],
        )
    })?;
    if !meta.is_file() {
        return Err(gettext_f("{name} is not a regular file", &[("name", &name)]));
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        return Err(too_large(&name, meta.len()));
    }
    if image_mime(path).is_some() && caps.is_some_and(|c| !c.image) {
        return Err(no_images(&name));
    }
    Ok(())
}

fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    std::fs::File::open(path)?.take(limit).read_to_end(&mut data)?;
    Ok(data)
}

/// The prompt of a user message: its text, then its attachments. Refused
/// (with the reason) when it holds an image and the agent takes none.
pub(super) fn prompt_blocks(
    m: &Message,
    caps: &acp::PromptCapabilities,
) -> Result<Vec<acp::ContentBlock>, String> {
    let mut blocks = Vec::new();
    let text = m.text();
    if !text.is_empty() {
        blocks.push(acp::ContentBlock::Text(acp::TextContent::new(text)));
    }
    for part in &m.parts {
        let Part::Attachment(a) = part else { continue };
        let content = a.content.as_deref().unwrap_or_default();
        blocks.push(match a.sent_as {
            AttachmentKind::Image if !caps.image => return Err(no_images(&a.name)),
            AttachmentKind::Image => {
                let data = base64::engine::general_purpose::STANDARD.encode(content);
                let mut image = acp::ImageContent::new(data, a.mime_type.clone());
                if !a.uri.is_empty() {
                    image = image.uri(a.uri.clone());
                }
                acp::ContentBlock::Image(image)
            }
            AttachmentKind::Embedded if caps.embedded_context => acp::ContentBlock::Resource(
                acp::EmbeddedResource::new(acp::EmbeddedResourceResource::TextResourceContents(
                    acp::TextResourceContents::new(String::from_utf8_lossy(content), a.uri.clone())
                        .mime_type(a.mime_type.clone()),
                )),
            ),
            // A link, or embedded text for an agent that no longer takes it.
            _ => acp::ContentBlock::ResourceLink(
                acp::ResourceLink::new(a.name.clone(), a.uri.clone())
                    .mime_type(a.mime_type.clone())
                    .size(i64::try_from(a.size).unwrap_or(i64::MAX)),
            ),
        });
    }
    Ok(blocks)
}

impl super::ChatService {
    /// `ChatService.FindFiles`: files under the agent's working directory
    /// that fuzzily match `query`, best first, relative to it (the
    /// directory is walked off the async threads, and kept for 30 s).
    pub async fn find_files(&self, agent: &str, query: &str, limit: usize) -> Result<Vec<String>, String> {
        let root = self
            .inner
            .supervisor
            .working_dir(agent)
            .ok_or_else(|| gettext_f("unknown agent: {name}", &[("name", agent)]))?;
        let this = self.clone();
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || this.inner.files.get(&root).search(&query, limit.clamp(1, 200)))
            .await
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(image: bool, embedded: bool) -> acp::PromptCapabilities {
        acp::PromptCapabilities::new()
            .image(image)
            .embedded_context(embedded)
    }

    #[test]
    fn files_go_as_links_or_embedded_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = dir.path().join("notes file.md");
        std::fs::write(&text, "# Notes\n").expect("write");
        let binary = dir.path().join("data.bin");
        std::fs::write(&binary, [0u8, 1, 2]).expect("write");

        let a = prepare(AttachmentInput::File(text.clone()), Some(&caps(false, false))).expect("link");
        assert_eq!(a.sent_as, AttachmentKind::Link);
        assert!(
            a.uri.starts_with("file:///") && a.uri.ends_with("notes%20file.md"),
            "{}",
            a.uri
        );
        let a = prepare(AttachmentInput::File(text), Some(&caps(false, true))).expect("embedded");
        assert_eq!(a.sent_as, AttachmentKind::Embedded);
        assert_eq!(a.mime_type, "text/markdown");
        let a = prepare(AttachmentInput::File(binary), Some(&caps(false, true))).expect("binary");
        assert_eq!(a.sent_as, AttachmentKind::Link, "binary is never embedded");
        let e = prepare(AttachmentInput::File(dir.path().to_path_buf()), None).expect_err("a directory");
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn images_and_limits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let png = dir.path().join("shot.PNG");
        std::fs::write(&png, b"\x89PNG\r\n").expect("write");
        let e = prepare(AttachmentInput::File(png.clone()), Some(&caps(false, true))).expect_err("no images");
        assert!(e.contains("does not take images"), "{e}");
        let a = prepare(AttachmentInput::File(png), Some(&caps(true, false))).expect("image");
        assert_eq!(
            (a.sent_as, a.mime_type.as_str()),
            (AttachmentKind::Image, "image/png")
        );

        let big = dir.path().join("big.log");
        let f = std::fs::File::create(&big).expect("create");
        f.set_len(MAX_ATTACHMENT_BYTES + 1).expect("set_len");
        let e = prepare(AttachmentInput::File(big), None).expect_err("too large");
        assert!(
            e.contains("is 10.1 MiB") && e.contains("limited to 10 MiB"),
            "{e}"
        );

        // Known only at the turn: the image is refused then.
        let a = prepare(
            AttachmentInput::Image {
                name: "Pasted image.png".into(),
                mime_type: "image/png".into(),
                data: vec![1, 2, 3],
            },
            None,
        )
        .expect("not known yet");
        let mut m = Message::new("m1".into(), "demo", crate::core::types::message::Role::User);
        m.parts.push(Part::Attachment(a));
        assert!(prompt_blocks(&m, &caps(false, false)).is_err());
        let blocks = prompt_blocks(&m, &caps(true, false)).expect("image");
        let json = serde_json::to_value(&blocks).expect("json");
        assert_eq!(json[0]["type"], "image");
        assert_eq!(json[0]["data"], "AQID");
    }
}
