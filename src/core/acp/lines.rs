//! Reading newline-delimited lines without trusting their length.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LineError {
    #[error("the agent sent a line longer than {cap} bytes")]
    TooLong { cap: usize },
    #[error("reading from the agent failed: {0}")]
    Io(String),
}

/// Reads the next line (without its `\n` or `\r\n`) into a fresh buffer.
/// `Ok(None)` at end of input. A line longer than `cap` bytes is an error and
/// the rest of the stream is not read: the caller ends the connection.
pub async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
) -> Result<Option<Vec<u8>>, LineError> {
    let mut line = Vec::new();
    loop {
        let chunk = reader
            .fill_buf()
            .await
            .map_err(|e| LineError::Io(e.to_string()))?;
        if chunk.is_empty() {
            // End of input: a last line without a newline still counts.
            return Ok(if line.is_empty() { None } else { Some(line) });
        }
        let (take, found) = match memchr(chunk) {
            Some(pos) => (pos, true),
            None => (chunk.len(), false),
        };
        if line.len() + take > cap {
            return Err(LineError::TooLong { cap });
        }
        line.extend_from_slice(&chunk[..take]);
        reader.consume(if found { take + 1 } else { take });
        if found {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

/// Reads the next line (without its `\n` or `\r\n`), keeping its first
/// `keep` bytes and skipping the rest as it arrives, so that a line without
/// end (an agent's stderr) never takes more memory than that. `Ok(None)` at
/// end of input; the flag says the line was cut.
pub async fn next_line_kept<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    keep: usize,
) -> Result<Option<(Vec<u8>, bool)>, LineError> {
    let mut line = Vec::new();
    let mut cut = false;
    let mut any = false;
    loop {
        let chunk = reader
            .fill_buf()
            .await
            .map_err(|e| LineError::Io(e.to_string()))?;
        if chunk.is_empty() {
            return Ok(any.then_some((line, cut)));
        }
        any = true;
        let (take, found) = match memchr(chunk) {
            Some(pos) => (pos, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(line.len());
        if take > room {
            cut = true;
        }
        line.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(if found { take + 1 } else { take });
        if found {
            if !cut && line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some((line, cut)));
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn all(input: &[u8], cap: usize) -> Vec<Result<Option<Vec<u8>>, LineError>> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let r = next_line(&mut reader, cap).await;
            let end = !matches!(r, Ok(Some(_)));
            out.push(r);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_across_small_buffers() {
        let out = all(b"hello world\r\n{}\nlast", 100).await;
        assert_eq!(
            out,
            vec![
                Ok(Some(b"hello world".to_vec())),
                Ok(Some(b"{}".to_vec())),
                Ok(Some(b"last".to_vec())),
                Ok(None)
            ]
        );
    }

    #[tokio::test]
    async fn a_kept_line_holds_its_first_bytes_and_the_next_line_follows() {
        // 10 MB without a newline, through a 4-byte buffer would be slow;
        // a repeating reader of 64 KiB pieces shows the same.
        let long = vec![b'a'; 10 << 20];
        let input = [&long[..], b"\nnext\r\nlast"].concat();
        let mut reader = BufReader::with_capacity(64 * 1024, &input[..]);
        let first = next_line_kept(&mut reader, 100).await.expect("read");
        assert_eq!(first, Some((vec![b'a'; 100], true)));
        let next = next_line_kept(&mut reader, 100).await.expect("read");
        assert_eq!(next, Some((b"next".to_vec(), false)));
        let last = next_line_kept(&mut reader, 100).await.expect("read");
        assert_eq!(last, Some((b"last".to_vec(), false)));
        assert_eq!(next_line_kept(&mut reader, 100).await, Ok(None));
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_an_error() {
        let out = all(b"12345\n123456\n", 5).await;
        assert_eq!(
            out,
            vec![Ok(Some(b"12345".to_vec())), Err(LineError::TooLong { cap: 5 })]
        );
    }
}
