//! For the registry's tests (integration and window): a loopback HTTP
//! server, and archives written by hand.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server answers for a path.
#[derive(Clone)]
pub enum Route {
    Bytes(Vec<u8>),
    /// The bytes, 64 KiB at a time with a pause between: a long download.
    Slow(Vec<u8>),
    /// `302 Found` to this address.
    Redirect(String),
}

/// A loopback HTTP/1.1 server: one thread, `Connection: close`.
pub struct Server {
    pub port: u16,
    routes: Arc<Mutex<HashMap<String, Route>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let r = routes.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let r = r.clone();
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(&stream);
                    let mut first = String::new();
                    if reader.read_line(&mut first).is_err() {
                        return;
                    }
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).map_or(true, |n| n == 0) || line == "\r\n" {
                            break;
                        }
                    }
                    let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let route = r.lock().unwrap_or_else(|e| e.into_inner()).get(&path).cloned();
                    let mut out = &stream;
                    match route {
                        None => {
                            let _ = out.write_all(
                                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                            );
                        }
                        Some(Route::Bytes(b)) => {
                            let _ = write!(
                                out,
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            );
                            let _ = out.write_all(&b);
                        }
                        Some(Route::Redirect(to)) => {
                            let _ = write!(out, "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        }
                        Some(Route::Slow(b)) => {
                            let _ = write!(
                                out,
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            );
                            for chunk in b.chunks(64 * 1024) {
                                if out.write_all(chunk).is_err() {
                                    return;
                                }
                                std::thread::sleep(Duration::from_millis(200));
                            }
                        }
                    }
                });
            }
        });
        Server { port, routes }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn put(&self, path: &str, route: Route) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_owned(), route);
    }
}

/// A tar header written by hand: the tar crate refuses to write the
/// hostile names these tests need. `kind`: b'0' file, b'2' symlink,
/// b'1' hard link, b'3' character device, b'5' directory.
pub fn tar_entry(out: &mut Vec<u8>, name: &str, kind: u8, link: &str, mode: u32, data: &[u8]) {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(format!("{mode:07o}").as_bytes());
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| *b as u32).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

pub fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(tar).expect("gzip");
    gz.finish().expect("gzip")
}

pub fn tar_gz(entries: &[(&str, u8, &str, u32, &[u8])]) -> Vec<u8> {
    let mut t = Vec::new();
    for (name, kind, link, mode, data) in entries {
        tar_entry(&mut t, name, *kind, link, *mode, data);
    }
    t.resize(t.len() + 1024, 0);
    gzip(&t)
}

/// A script that runs the demo agent at `demo`.
pub fn launcher(demo: &str) -> Vec<u8> {
    format!("#!/bin/sh\nexec '{demo}' \"$@\"\n").into_bytes()
}

/// The binary agent: a launcher, a link that stays inside, a file beside.
pub fn good_archive(demo: &str) -> Vec<u8> {
    tar_gz(&[
        ("demo/", b'5', "", 0o755, b""),
        ("demo/bin/", b'5', "", 0o755, b""),
        ("demo/bin/demo-agent", b'0', "", 0o755, &launcher(demo)),
        ("demo/current", b'2', "bin", 0o777, b""),
        ("demo/README", b'0', "", 0o644, b"the demo agent, for tests\n"),
    ])
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
