//! Just enough HTTP/1.1 for the simulated short link: build a POST and a
//! response with `Content-Length`, and find where a message ends.
//! (The real short-link codec is stn-proto's; this one only frames bytes for
//! the simulator's own client and server models.)

/// Largest head (request/status line plus headers) accepted.
pub const MAX_HEAD: usize = 16 * 1024;

/// Why a message could not be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// No blank line within [`MAX_HEAD`] bytes.
    #[error("HTTP head too large")]
    HeadTooLarge,
    /// The head is not valid UTF-8 or a header is malformed.
    #[error("malformed HTTP head")]
    Malformed,
}

/// A `POST path` request with `Connection: close` and the body.
///
/// ```
/// let r = stn_sim::http::post("/mars/hello2", "118.89.24.72:8080", b"hi");
/// assert_eq!(stn_sim::http::message_len(&r), Ok(Some(r.len())));
/// ```
pub fn post(path: &str, host: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// A response with the given status, `Connection: close` and the body.
pub fn response(status: u16, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status} OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// The total length (head + body) of the message at the start of `buf`:
/// `Ok(None)` while the head is incomplete; a missing `Content-Length`
/// means an empty body.
pub fn message_len(buf: &[u8]) -> Result<Option<usize>, HttpError> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() > MAX_HEAD {
            Err(HttpError::HeadTooLarge)
        } else {
            Ok(None)
        };
    };
    let head_len = end + 4;
    if head_len > MAX_HEAD {
        return Err(HttpError::HeadTooLarge);
    }
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| HttpError::Malformed)?;
    let mut body = 0usize;
    for line in head.split("\r\n").skip(1) {
        let (name, value) = line.split_once(':').ok_or(HttpError::Malformed)?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            body = value.trim().parse().map_err(|_| HttpError::Malformed)?;
        }
    }
    head_len
        .checked_add(body)
        .map(Some)
        .ok_or(HttpError::Malformed)
}

/// The status code of a response head (`HTTP/1.1 200 ...`).
pub fn status(buf: &[u8]) -> Option<u16> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[..line_end]).ok()?;
    let mut parts = line.split(' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing() {
        let r = response(200, &[7u8; 300]);
        assert_eq!(message_len(&r[..10]), Ok(None));
        assert_eq!(message_len(&r), Ok(Some(r.len())));
        assert_eq!(status(&r), Some(200));
        assert_eq!(
            message_len(b"GET / HTTP/1.1\r\nbad\r\n\r\n"),
            Err(HttpError::Malformed)
        );
        assert_eq!(
            message_len(&vec![b'a'; MAX_HEAD + 1]),
            Err(HttpError::HeadTooLarge)
        );
        assert_eq!(message_len(b"GET / HTTP/1.1\r\n\r\n"), Ok(Some(18)));
    }
}
