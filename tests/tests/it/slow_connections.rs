//! Connections that never finish a request, tried as an attacker would: thousands held open
//! with half a request line, or nothing at all, while a normal client keeps being served; each
//! is closed once `--read-header-timeout` passes, as is an idle HTTP/1.1 keep-alive connection.
//! A client whose body is over the limit, still sending it as the 413 is decided, reads the 413
//! and keeps its connection. An HTTP/2 connection is told how many streams it may open, and is
//! closed with a GOAWAY once idle for `--idle-connection-timeout`, but not while a watch on it
//! is open.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use strategy_host_e2e::{call, HostProcess};

/// How many connections the attacker holds of each kind.
const HELD: usize = 1000;

/// Whether the server closed `conn` (end of stream or reset) within `wait`.
fn closed_within(conn: &mut TcpStream, wait: Duration) -> bool {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or anything else the server sends before closing: read on.
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn connections_that_never_finish_a_request_are_closed_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data, "--read-header-timeout", "3s"]).unwrap();
    let addr = host.base_url.trim_start_matches("http://").to_owned();

    let mut held = Vec::with_capacity(2 * HELD);
    for i in 0..2 * HELD {
        let mut conn = TcpStream::connect(&addr).unwrap();
        if i % 2 == 0 {
            conn.write_all(b"GET /api HT").unwrap();
        }
        held.push(conn);
    }
    let opened = Instant::now();
    // A normal client, meanwhile: every request answered.
    for _ in 0..20 {
        let r = call("GET", &host.url("/api"), None).unwrap();
        assert_eq!(r.code, 200, "{}", r.body);
    }
    // An idle keep-alive connection after a full request.
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 12];
    idle.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");

    // Every held connection is closed once the timeout passed (it started as each opened, by
    // the time the last one was).
    let deadline = opened + Duration::from_secs(3 + 10);
    let mut still_open = 0;
    for conn in &mut held {
        let left = deadline.saturating_duration_since(Instant::now());
        if !closed_within(conn, left.max(Duration::from_millis(10))) {
            still_open += 1;
        }
    }
    assert_eq!(still_open, 0, "of {} connections", held.len());
    assert!(
        closed_within(&mut idle, Duration::from_secs(10)),
        "the idle connection is closed"
    );
    // And the server serves on.
    let r = call("GET", &host.url("/api"), None).unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
}

/// Reads one HTTP/1.1 response with a Content-Length body from `conn`: (status code, body).
fn read_response(conn: &mut TcpStream) -> (u16, String) {
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                let code = text[9..12].parse().unwrap();
                return (code, text[end + 4..end + 4 + length].to_owned());
            }
        }
        let n = conn.read(&mut buf).expect("the server answers");
        assert!(n > 0, "the server closed the connection: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn a_body_over_the_limit_is_answered_413_on_a_connection_that_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host =
        HostProcess::start(&["--data-dir", &data, "--max-request-body-bytes", "100000"]).unwrap();
    let addr = host.base_url.trim_start_matches("http://").to_owned();
    let mut conn = TcpStream::connect(&addr).unwrap();
    let body = vec![b' '; 200_000];
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).unwrap();
    // The server decides on the headers alone; the body follows as a slow client sends it.
    std::thread::sleep(Duration::from_millis(300));
    conn.write_all(&body)
        .expect("the body is taken, not refused mid-way");
    let (code, answer) = read_response(&mut conn);
    assert_eq!(code, 413, "{answer}");
    assert!(answer.contains("RequestEntityTooLarge"), "{answer}");
    // The same connection serves the next request.
    let next = format!("GET /version HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    conn.write_all(next.as_bytes()).unwrap();
    let (code, answer) = read_response(&mut conn);
    assert_eq!(code, 200, "{answer}");
}

/// The SETTINGS_MAX_CONCURRENT_STREAMS the server announces on a new HTTP/2 connection
/// (prior knowledge, as the plain-HTTP development mode serves it).
fn announced_max_streams(addr: &str) -> Option<u32> {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    conn.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap(); // an empty SETTINGS frame
    loop {
        let mut header = [0u8; 9];
        conn.read_exact(&mut header).ok()?;
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let mut payload = vec![0u8; len];
        conn.read_exact(&mut payload).ok()?;
        // SETTINGS, not an ACK: six bytes per setting.
        if header[3] == 4 && header[4] & 1 == 0 {
            return payload.chunks(6).find_map(|s| {
                (u16::from_be_bytes([s[0], s[1]]) == 3)
                    .then(|| u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
            });
        }
    }
}

#[test]
fn http2_connections_are_limited_in_streams_as_kube_apiserver() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let default = HostProcess::start(&["--data-dir", &data]).unwrap();
    let addr = default.base_url.trim_start_matches("http://").to_owned();
    assert_eq!(announced_max_streams(&addr), Some(250));
    drop(default);
    let limited = HostProcess::start(&[
        "--data-dir",
        &data,
        "--http2-max-streams-per-connection",
        "20",
    ])
    .unwrap();
    let addr = limited.base_url.trim_start_matches("http://").to_owned();
    assert_eq!(announced_max_streams(&addr), Some(20));
}

/// An HTTP/2 connection (h2c by prior knowledge) to `addr` and a task that ends when the
/// server closes it.
async fn h2_connection(
    addr: &str,
) -> (
    hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (sender, task)
}

#[test]
fn an_idle_http2_connection_is_closed_but_not_one_with_an_open_watch() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host =
        HostProcess::start(&["--data-dir", &data, "--idle-connection-timeout", "2s"]).unwrap();
    let addr = host.base_url.trim_start_matches("http://").to_owned();
    let origin = host.base_url.clone();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let get = |path: &str| {
            hyper::Request::get(format!("{origin}{path}"))
                .body(http_body_util::Empty::new())
                .unwrap()
        };
        // One request, then nothing: closed once idle for 2 s, not before.
        let (mut idle, idle_closed) = h2_connection(&addr).await;
        let answered = idle.send_request(get("/api/v1/namespaces")).await.unwrap();
        assert_eq!(answered.status(), 200);
        drop(answered);
        let quiet_from = Instant::now();
        // A watch held open: the connection is busy all along.
        let (mut watching, watching_closed) = h2_connection(&addr).await;
        let watch = watching
            .send_request(get(
                "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60",
            ))
            .await
            .unwrap();
        assert_eq!(watch.status(), 200);
        tokio::time::timeout(Duration::from_secs(15), idle_closed)
            .await
            .expect("the idle connection was not closed")
            .unwrap();
        let after = quiet_from.elapsed();
        assert!(
            after >= Duration::from_millis(1900),
            "closed after {after:?}"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            !watching_closed.is_finished(),
            "the connection with an open watch was closed"
        );
        // The watching connection still serves new requests.
        let more = watching
            .send_request(get("/api/v1/namespaces"))
            .await
            .unwrap();
        assert_eq!(more.status(), 200);
        drop(watch);
    });
}
