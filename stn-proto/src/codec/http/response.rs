//! The incremental, bounded short-link response parser.

use bytes::Bytes;

use super::request::{is_tchar, is_value_byte};
use super::{HttpError, HttpLimits, HttpResponse, HttpVersion};

/// What one [`ResponseParser::feed`] call achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The response is not complete yet: feed more bytes (or call
    /// [`ResponseParser::finish_eof`] when the peer closed).
    Partial,
    /// The final response is complete. Bytes after its end (in this call or
    /// later ones) are ignored, as Mars ignores them, and counted in
    /// [`ResponseParser::excess_len`].
    Complete(HttpResponse),
    /// The response was already returned by an earlier call; these bytes came
    /// after its end and were only counted in
    /// [`ResponseParser::excess_len`].
    AfterEnd,
}

/// An incremental HTTP/1.x response parser for one short-link exchange.
///
/// Feed it whatever the socket delivered, in any chunking: the outcome
/// (the response or the error) is the same as for the whole byte stream at
/// once. It keeps at most `max_head_len + max_body_len` bytes
/// ([`buffered_len`](Self::buffered_len)): the current head line and the
/// parsed header fields (together never more than the head received), then
/// the body. Chunk-size lines and trailers are parsed by a state machine and
/// not buffered.
///
/// Accepted: `HTTP/1.0` and `HTTP/1.1` status lines with a 3-digit code and an
/// optional reason; header fields with optional whitespace around values;
/// lines ended by CRLF or a bare LF (RFC 9112 §2.2); interim 1xx responses
/// (skipped, except 101 which is final and bodyless; all of a response's
/// interim heads together at most `max_head_len` bytes, else
/// [`HttpError::InterimTooLarge`]); bodies framed by
/// `Content-Length` or `Transfer-Encoding: chunked` (chunk extensions ignored,
/// trailers consumed and discarded); 204 and 304 bodies are empty.
///
/// Rejected, with the parser then poisoned (every later call returns the same
/// error): see [`HttpError`]. Stricter than Mars in places: obsolete line
/// folding, whitespace before a header's colon, non-UTF-8 header values,
/// differing `Content-Length` values, a transfer coding other than a single
/// `chunked`, and `Transfer-Encoding` in an HTTP/1.0 response (RFC 9112 §6.1).
///
/// A response with neither `Content-Length` nor `chunked` is delimited by the
/// connection close (RFC 9112 §6.3). Mars never completes such a body (its
/// short link treats EOF before the parser's end as
/// `kEctSocketShutdown`), so by default [`finish_eof`](Self::finish_eof)
/// fails with [`HttpError::UnexpectedEof`]; [`HttpLimits::read_until_close`]
/// accepts the body instead.
#[derive(Clone, Debug)]
pub struct ResponseParser {
    limits: HttpLimits,
    state: State,
    /// The current, incomplete head line (complete lines are parsed at once).
    line: Vec<u8>,
    /// Bytes of the current head received so far (status line included).
    head_len: usize,
    /// Set once the current head's status line is parsed.
    status: Option<(HttpVersion, u16)>,
    headers: Vec<(String, String)>,
    /// Total length of the names and values in `headers`.
    headers_len: usize,
    body: Vec<u8>,
    /// Declared body length, once known (Content-Length framing).
    content_length: Option<u64>,
    bytes_received: u64,
    excess: u64,
    interim: u32,
    /// Bytes of the interim heads skipped so far (capped like one head).
    interim_len: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Head,
    Body(Body),
    /// The response was returned; later bytes are excess.
    Done,
    Failed(HttpError),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Body {
    Length { remaining: u64 },
    UntilClose,
    Chunked(Chunk),
}

/// The chunked-body state machine (RFC 9112 §7.1). `line` counts the bytes of
/// the current chunk-size line, `total` the bytes of the trailer section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of the chunk size (`digits` so far).
    Size {
        value: u64,
        digits: u32,
        line: usize,
    },
    /// Whitespace after the size, before an extension or the line end.
    SizeWs {
        value: u64,
        line: usize,
    },
    /// Inside chunk extensions: ignored up to the line end.
    Ext {
        value: u64,
        line: usize,
    },
    /// Saw CR at the end of the size line.
    SizeLf {
        value: u64,
    },
    Data {
        remaining: u64,
    },
    /// After the chunk data: expect CRLF (or a bare LF).
    DataEnd,
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart {
        total: usize,
    },
    TrailerText {
        total: usize,
    },
    TrailerCr {
        total: usize,
    },
    /// Saw CR of the final empty line.
    EndLf,
}

impl ResponseParser {
    /// A parser for one response, bounded by `limits`.
    pub fn new(limits: HttpLimits) -> Self {
        ResponseParser {
            limits,
            state: State::Head,
            line: Vec::new(),
            head_len: 0,
            status: None,
            headers: Vec::new(),
            headers_len: 0,
            body: Vec::new(),
            content_length: None,
            bytes_received: 0,
            excess: 0,
            interim: 0,
            interim_len: 0,
        }
    }

    /// The limits this parser enforces.
    pub fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    /// Parses the next bytes received from the peer.
    ///
    /// Returns [`Progress::Complete`] exactly once, with the final response;
    /// errors poison the parser. Feeding an empty slice changes nothing.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, HttpError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        self.bytes_received = self.bytes_received.saturating_add(data.len() as u64);
        if self.state == State::Done {
            self.excess = self.excess.saturating_add(data.len() as u64);
            return Ok(Progress::AfterEnd);
        }
        match self.run(data) {
            Ok(None) => Ok(Progress::Partial),
            Ok(Some(consumed)) => {
                self.excess = (data.len() - consumed) as u64;
                Ok(Progress::Complete(self.take_response()))
            }
            Err(e) => {
                self.fail(e.clone());
                Err(e)
            }
        }
    }

    /// The peer closed the connection (clean EOF): returns the response if the
    /// close completes it, otherwise fails with [`HttpError::UnexpectedEof`]
    /// and poisons the parser.
    ///
    /// Only a close-delimited body (neither `Content-Length` nor `chunked`)
    /// can be completed by EOF, and only with
    /// [`HttpLimits::read_until_close`]; Mars's rule (the default) is that any
    /// EOF before the parser's end is an error. After
    /// [`Progress::Complete`] this returns [`HttpError::AlreadyComplete`].
    pub fn finish_eof(&mut self) -> Result<HttpResponse, HttpError> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Done => Err(HttpError::AlreadyComplete),
            State::Body(Body::UntilClose) if self.limits.read_until_close => {
                self.state = State::Done;
                Ok(self.take_response())
            }
            _ => {
                self.fail(HttpError::UnexpectedEof);
                Err(HttpError::UnexpectedEof)
            }
        }
    }

    /// Bytes received so far (everything given to [`feed`](Self::feed),
    /// interim responses and excess included).
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// Whether any byte of the response has arrived (Mars's first-packet
    /// timeout stops here).
    pub fn first_byte_received(&self) -> bool {
        self.bytes_received > 0
    }

    /// Whether the final (non-1xx) response head has been parsed.
    pub fn head_complete(&self) -> bool {
        matches!(self.state, State::Body(_) | State::Done)
    }

    /// The status code of the current head, once its status line is parsed:
    /// an interim 1xx while that head is read, `None` between heads, then the
    /// final status (kept after completion).
    pub fn status(&self) -> Option<u16> {
        self.status.map(|(_, s)| s)
    }

    /// Body bytes received so far (decoded, for chunked bodies).
    pub fn body_received(&self) -> usize {
        self.body.len()
    }

    /// The body length the final head declared with `Content-Length`, once
    /// known (`None` for chunked or close-delimited bodies).
    pub fn expected_body_len(&self) -> Option<u64> {
        self.content_length
    }

    /// How many interim (1xx) responses were skipped.
    pub fn interim_responses(&self) -> u32 {
        self.interim
    }

    /// Whether the response was complete and returned.
    pub fn is_complete(&self) -> bool {
        self.state == State::Done
    }

    /// The error that poisoned the parser, if any.
    pub fn error(&self) -> Option<&HttpError> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Bytes received after the end of the response (ignored).
    pub fn excess_len(&self) -> u64 {
        self.excess
    }

    /// Bytes the parser currently retains: the partial head line, the parsed
    /// header names and values, and the body. Never more than
    /// `max_head_len + max_body_len`.
    pub fn buffered_len(&self) -> usize {
        self.line.len() + self.headers_len + self.body.len()
    }

    fn fail(&mut self, e: HttpError) {
        self.state = State::Failed(e);
        // Release what was buffered: nothing of it will be used.
        self.line = Vec::new();
        self.headers = Vec::new();
        self.headers_len = 0;
        self.body = Vec::new();
    }

    fn take_response(&mut self) -> HttpResponse {
        let (version, status) = self.status.unwrap_or((HttpVersion::Http11, 0));
        self.headers_len = 0;
        HttpResponse {
            status,
            version,
            headers: std::mem::take(&mut self.headers),
            body: Bytes::from(std::mem::take(&mut self.body)),
        }
    }

    /// Runs the machine over `data`. `Ok(Some(n))`: the response completed
    /// after `n` bytes of `data` (state is then `Done`).
    fn run(&mut self, data: &[u8]) -> Result<Option<usize>, HttpError> {
        let mut pos = 0;
        loop {
            match &mut self.state {
                State::Head => {
                    if pos == data.len() {
                        return Ok(None);
                    }
                    pos += self.head_step(&data[pos..])?;
                }
                State::Body(Body::Length { remaining }) => {
                    let take =
                        (data.len() - pos).min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    *remaining -= take as u64;
                    let done = *remaining == 0;
                    // Grown as bytes arrive, not reserved from the declared
                    // length: a lying Content-Length costs nothing.
                    grow(&mut self.body, take, self.limits.max_body_len);
                    self.body.extend_from_slice(&data[pos..pos + take]);
                    pos += take;
                    if done {
                        self.state = State::Done;
                        return Ok(Some(pos));
                    }
                    return Ok(None);
                }
                State::Body(Body::UntilClose) => {
                    let rest = &data[pos..];
                    if self.body.len().saturating_add(rest.len()) > self.limits.max_body_len {
                        // Reported as "one past the limit" so the error does
                        // not depend on how the bytes were chunked.
                        return Err(HttpError::BodyTooLarge {
                            len: self.limits.max_body_len as u64 + 1,
                            limit: self.limits.max_body_len,
                        });
                    }
                    grow(&mut self.body, rest.len(), self.limits.max_body_len);
                    self.body.extend_from_slice(rest);
                    return Ok(None);
                }
                State::Body(Body::Chunked(_)) => {
                    if pos == data.len() {
                        return Ok(None);
                    }
                    let (n, done) = self.chunk_step(&data[pos..])?;
                    pos += n;
                    if done {
                        self.state = State::Done;
                        return Ok(Some(pos));
                    }
                }
                State::Done => return Ok(Some(pos)),
                State::Failed(e) => return Err(e.clone()),
            }
        }
    }

    /// Consumes head bytes up to and including at most one line end.
    fn head_step(&mut self, rest: &[u8]) -> Result<usize, HttpError> {
        let room = self.limits.max_head_len - self.head_len;
        let seg_end = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => rest.len(),
        };
        if seg_end > room {
            // Bytes inside the limit are judged first, so the error is the
            // same whatever the chunking.
            if self.status.is_none() {
                self.check_status_prefix(&rest[..room])?;
            }
            return Err(HttpError::HeadTooLarge {
                limit: self.limits.max_head_len,
            });
        }
        self.head_len += seg_end;
        let seg = &rest[..seg_end];
        if seg.last() != Some(&b'\n') {
            if self.status.is_none() {
                self.check_status_prefix(seg)?;
            }
            grow(&mut self.line, seg.len(), self.limits.max_head_len);
            self.line.extend_from_slice(seg);
            return Ok(seg_end);
        }
        if self.line.is_empty() {
            self.head_line(&seg[..seg.len() - 1])?;
        } else {
            let mut line = std::mem::take(&mut self.line);
            grow(&mut line, seg.len() - 1, self.limits.max_head_len);
            line.extend_from_slice(&seg[..seg.len() - 1]);
            let r = self.head_line(&line);
            if matches!(self.state, State::Head) {
                // Keep the allocation for the next head line.
                line.clear();
                self.line = line;
            }
            r?;
        }
        Ok(seg_end)
    }

    /// Fails early when the start of the status line cannot be `HTTP/1.`.
    fn check_status_prefix(&self, more: &[u8]) -> Result<(), HttpError> {
        const PREFIX: &[u8] = b"HTTP/1.";
        let have = self.line.len();
        if have >= PREFIX.len() {
            return Ok(());
        }
        let n = more.len().min(PREFIX.len() - have);
        if more[..n] != PREFIX[have..have + n] {
            return Err(HttpError::BadStatusLine);
        }
        Ok(())
    }

    /// One complete head line, without its LF.
    fn head_line(&mut self, line: &[u8]) -> Result<(), HttpError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.status.is_none() {
            self.status = Some(parse_status_line(line)?);
            return Ok(());
        }
        if line.is_empty() {
            return self.end_of_head();
        }
        if self.headers.len() >= self.limits.max_headers {
            return Err(HttpError::TooManyHeaders {
                limit: self.limits.max_headers,
            });
        }
        let (name, value) = parse_header_line(line)?;
        self.headers_len += name.len() + value.len();
        self.headers.push((name, value));
        Ok(())
    }

    fn end_of_head(&mut self) -> Result<(), HttpError> {
        let (version, status) = match self.status {
            Some(s) => s,
            None => return Err(HttpError::BadStatusLine),
        };
        if (100..200).contains(&status) && status != 101 {
            // Interim response: skip it and parse the next head. Together
            // the interim heads are capped like one head, or a server could
            // keep a task reading `100 Continue` forever.
            self.interim_len = self.interim_len.saturating_add(self.head_len);
            if self.interim_len > self.limits.max_head_len {
                return Err(HttpError::InterimTooLarge {
                    limit: self.limits.max_head_len,
                });
            }
            self.interim = self.interim.saturating_add(1);
            self.status = None;
            self.headers.clear();
            self.headers_len = 0;
            self.head_len = 0;
            return Ok(());
        }
        if status == 101 || status == 204 || status == 304 {
            self.state = State::Done;
            return Ok(());
        }
        let mut te: Option<bool> = None; // Some(true): exactly one `chunked`
        let mut cl: Option<u64> = None;
        for (name, value) in &self.headers {
            if name.eq_ignore_ascii_case("transfer-encoding") {
                for coding in value.split(',').map(|c| c.trim_matches([' ', '\t'])) {
                    let chunked = coding.eq_ignore_ascii_case("chunked");
                    te = Some(te.is_none() && chunked);
                }
            } else if name.eq_ignore_ascii_case("content-length") {
                for v in value.split(',').map(|v| v.trim_matches([' ', '\t'])) {
                    let n = parse_decimal(v).ok_or(HttpError::BadContentLength)?;
                    if cl.is_some_and(|c| c != n) {
                        return Err(HttpError::BadContentLength);
                    }
                    cl = Some(n);
                }
            }
        }
        let limit = self.limits.max_body_len;
        // The head is parsed: its line buffer is no longer needed.
        self.line = Vec::new();
        match te {
            Some(true) if version == HttpVersion::Http11 => {
                // RFC 9112 §6.3: chunked wins over Content-Length.
                self.state = State::Body(Body::Chunked(Chunk::Size {
                    value: 0,
                    digits: 0,
                    line: 0,
                }));
            }
            Some(true) => {
                return Err(HttpError::BadHeader(
                    "Transfer-Encoding in an HTTP/1.0 response",
                ))
            }
            Some(false) => return Err(HttpError::BadHeader("unsupported Transfer-Encoding")),
            None => match cl {
                Some(n) if n > limit as u64 => {
                    return Err(HttpError::BodyTooLarge { len: n, limit })
                }
                Some(0) => self.state = State::Done,
                Some(n) => {
                    self.content_length = Some(n);
                    self.state = State::Body(Body::Length { remaining: n });
                }
                None => self.state = State::Body(Body::UntilClose),
            },
        }
        Ok(())
    }

    /// Advances the chunked machine over `rest`; returns the bytes consumed
    /// and whether the body (with its trailers) is complete.
    fn chunk_step(&mut self, rest: &[u8]) -> Result<(usize, bool), HttpError> {
        let State::Body(Body::Chunked(mut st)) = self.state else {
            unreachable!("chunk_step outside a chunked body")
        };
        let max_line = self.limits.max_head_len;
        let mut i = 0;
        let result = loop {
            if let Chunk::Data { remaining } = st {
                let take = (rest.len() - i).min(usize::try_from(remaining).unwrap_or(usize::MAX));
                grow(&mut self.body, take, self.limits.max_body_len);
                self.body.extend_from_slice(&rest[i..i + take]);
                i += take;
                st = if remaining == take as u64 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data {
                        remaining: remaining - take as u64,
                    }
                };
                if i == rest.len() {
                    break Ok(false);
                }
                continue;
            }
            if i == rest.len() {
                break Ok(false);
            }
            let b = rest[i];
            i += 1;
            st = match st {
                Chunk::Size {
                    value,
                    digits,
                    line,
                } => {
                    if line >= max_line {
                        break Err(HttpError::BadChunk("chunk-size line too long"));
                    }
                    if let Some(d) = hex_value(b) {
                        if value > u64::MAX >> 4 {
                            break Err(HttpError::BadChunk("chunk size overflows 64 bits"));
                        }
                        let value = value << 4 | u64::from(d);
                        // The size only grows with more digits: fail as soon as
                        // it is over budget.
                        let len = (self.body.len() as u64).saturating_add(value);
                        if len > self.limits.max_body_len as u64 {
                            break Err(HttpError::BodyTooLarge {
                                len,
                                limit: self.limits.max_body_len,
                            });
                        }
                        Chunk::Size {
                            value,
                            digits: digits + 1,
                            line: line + 1,
                        }
                    } else if digits == 0 {
                        break Err(HttpError::BadChunk("chunk size is not hexadecimal"));
                    } else {
                        match b {
                            b' ' | b'\t' => Chunk::SizeWs {
                                value,
                                line: line + 1,
                            },
                            b';' => Chunk::Ext {
                                value,
                                line: line + 1,
                            },
                            b'\r' => Chunk::SizeLf { value },
                            b'\n' => self.size_line_done(value),
                            _ => break Err(HttpError::BadChunk("chunk size is not hexadecimal")),
                        }
                    }
                }
                Chunk::SizeWs { value, line } => {
                    if line >= max_line {
                        break Err(HttpError::BadChunk("chunk-size line too long"));
                    }
                    match b {
                        b' ' | b'\t' => Chunk::SizeWs {
                            value,
                            line: line + 1,
                        },
                        b';' => Chunk::Ext {
                            value,
                            line: line + 1,
                        },
                        b'\r' => Chunk::SizeLf { value },
                        b'\n' => self.size_line_done(value),
                        _ => break Err(HttpError::BadChunk("unexpected byte after chunk size")),
                    }
                }
                Chunk::Ext { value, line } => match b {
                    b'\r' => Chunk::SizeLf { value },
                    b'\n' => self.size_line_done(value),
                    _ if line >= max_line => {
                        break Err(HttpError::BadChunk("chunk-size line too long"))
                    }
                    _ => Chunk::Ext {
                        value,
                        line: line + 1,
                    },
                },
                Chunk::SizeLf { value } => match b {
                    b'\n' => self.size_line_done(value),
                    _ => break Err(HttpError::BadChunk("CR without LF in chunk-size line")),
                },
                Chunk::Data { .. } => unreachable!("handled above"),
                Chunk::DataEnd => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::Size {
                        value: 0,
                        digits: 0,
                        line: 0,
                    },
                    _ => break Err(HttpError::BadChunk("chunk data longer than its size")),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::Size {
                        value: 0,
                        digits: 0,
                        line: 0,
                    },
                    _ => break Err(HttpError::BadChunk("CR without LF after chunk data")),
                },
                Chunk::TrailerStart { total } => match b {
                    b'\r' => Chunk::EndLf,
                    b'\n' => break Ok(true),
                    _ => self.trailer_byte(total)?,
                },
                Chunk::TrailerText { total } => match b {
                    b'\r' => Chunk::TrailerCr { total },
                    b'\n' => Chunk::TrailerStart { total },
                    _ => self.trailer_byte(total)?,
                },
                Chunk::TrailerCr { total } => match b {
                    b'\n' => Chunk::TrailerStart { total },
                    _ => break Err(HttpError::BadChunk("CR without LF in trailer")),
                },
                Chunk::EndLf => match b {
                    b'\n' => break Ok(true),
                    _ => break Err(HttpError::BadChunk("CR without LF at end of chunked body")),
                },
            };
        };
        let done = result?;
        self.state = State::Body(Body::Chunked(st));
        Ok((i, done))
    }

    fn size_line_done(&self, value: u64) -> Chunk {
        if value == 0 {
            Chunk::TrailerStart { total: 0 }
        } else {
            Chunk::Data { remaining: value }
        }
    }

    /// One trailer byte that is neither CR nor LF; the trailer section is
    /// bounded like a head.
    fn trailer_byte(&self, total: usize) -> Result<Chunk, HttpError> {
        if total >= self.limits.max_head_len {
            return Err(HttpError::HeadTooLarge {
                limit: self.limits.max_head_len,
            });
        }
        Ok(Chunk::TrailerText { total: total + 1 })
    }
}

/// Grows `buf` for `additional` more bytes with amortised doubling, but never
/// beyond `cap` bytes of capacity for a length within `cap`.
fn grow(buf: &mut Vec<u8>, additional: usize, cap: usize) {
    let need = buf.len().saturating_add(additional);
    if need <= buf.capacity() {
        return;
    }
    let target = need
        .max(buf.capacity().saturating_mul(2))
        .min(cap.max(need));
    buf.reserve_exact(target - buf.len());
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `1*DIGIT` without sign or whitespace; `None` on overflow.
fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// `HTTP/1.x SP 3DIGIT [SP reason]`, without the line end.
fn parse_status_line(line: &[u8]) -> Result<(HttpVersion, u16), HttpError> {
    let version = match line.get(..8) {
        Some(b"HTTP/1.1") => HttpVersion::Http11,
        Some(b"HTTP/1.0") => HttpVersion::Http10,
        _ => return Err(HttpError::BadStatusLine),
    };
    let rest = &line[8..];
    let code = match rest {
        [b' ', a, b, c, tail @ ..]
            if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() =>
        {
            let reason_ok = match tail {
                [] => true,
                [b' ', reason @ ..] => reason.iter().all(|&b| is_value_byte(b)),
                _ => false,
            };
            if !reason_ok {
                return Err(HttpError::BadStatusLine);
            }
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => return Err(HttpError::BadStatusLine),
    };
    if code < 100 {
        return Err(HttpError::BadStatusLine);
    }
    Ok((version, code))
}

/// `token ":" OWS value OWS`, without the line end.
fn parse_header_line(line: &[u8]) -> Result<(String, String), HttpError> {
    if matches!(line.first(), Some(b' ' | b'\t')) {
        return Err(HttpError::BadHeader("obsolete line folding"));
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HttpError::BadHeader("header line without ':'"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::BadHeader("invalid header name"));
    }
    let value = trim_ows(value);
    if !value.iter().all(|&b| is_value_byte(b)) {
        return Err(HttpError::BadHeader("control character in header value"));
    }
    let value = std::str::from_utf8(value)
        .map_err(|_| HttpError::BadHeader("header value is not UTF-8"))?;
    // Names are tokens, hence ASCII.
    let name = String::from_utf8(name.to_vec())
        .map_err(|_| HttpError::BadHeader("invalid header name"))?;
    Ok((name, value.to_owned()))
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests;
