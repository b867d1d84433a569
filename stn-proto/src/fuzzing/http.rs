//! The short-link HTTP response parser target.

use arbitrary::{Arbitrary, Unstructured};

use super::{random_chunks, split_prefix};
use crate::codec::http::{
    HttpError, HttpLimits, HttpResponse, HttpVersion, Progress, ResponseParser,
};
use crate::profile::Profile;

/// Input layout: an 8-byte prefix, then the rest.
///
/// | bytes | meaning |
/// |---|---|
/// | 0 | mode: bit 0 clear = the rest is raw response bytes; set = the rest drives [`Unstructured`] to generate a valid response |
/// | 1 | limits (raw mode): `% 4` = 0 stn, 1 Mars, 2 small (bytes 2..6), 3 stn reading until close |
/// | 2..6 | small limits: head `16 + 2·b2`, headers `b3 % 8`, body `4·b4`, read until close `b5 & 1` |
/// | 6..8 | seed of the random chunking, big-endian |
const PREFIX: usize = 8;

/// Parses the response whole, one byte at a time and in random chunks, then
/// hits EOF, and checks:
/// - memory: [`ResponseParser::buffered_len`] never exceeds
///   `max_head_len + max_body_len`, and a complete response respects every
///   limit (body, header count, status range, bodyless statuses);
/// - chunking invariance: byte-at-a-time, random chunks and the whole buffer
///   give the same response or error, the same byte and excess counts;
/// - poisoning: after an error every call returns it, and after completion
///   later bytes are excess and EOF is [`HttpError::AlreadyComplete`];
/// - round trip (generated mode): a valid response built from the input —
///   interim 1xx heads, any headers, `Content-Length`, chunked (extensions,
///   trailers) or close-delimited framing, CRLF or bare LF, bytes after the
///   end — parses back to exactly what was generated.
pub fn http_response(data: &[u8]) {
    let (prefix, rest) = split_prefix::<PREFIX>(data);
    let seed = u64::from(u16::from_be_bytes([prefix[6], prefix[7]]));
    if prefix[0] & 1 == 0 {
        let limits = limits_from(&prefix);
        parse_three_ways(limits, rest, seed);
        return;
    }
    let mut u = Unstructured::new(rest);
    let Ok(spec) = ResponseSpec::arbitrary(&mut u) else {
        return;
    };
    let (wire, expected, excess) = spec.render();
    let limits = HttpLimits {
        read_until_close: spec.framing == Framing::UntilClose,
        ..HttpLimits::default()
    };
    let parsed = parse_three_ways(limits, &wire, seed);
    assert_eq!(
        parsed.result,
        Ok(expected),
        "generated response parsed differently"
    );
    assert_eq!(parsed.excess, excess as u64);
    assert_eq!(parsed.interim, u32::from(spec.interim % 3));
}

fn limits_from(prefix: &[u8; PREFIX]) -> HttpLimits {
    match prefix[1] % 4 {
        0 => HttpLimits::for_profile(Profile::Stn),
        1 => HttpLimits::for_profile(Profile::Mars),
        2 => HttpLimits {
            max_head_len: 16 + 2 * usize::from(prefix[2]),
            max_headers: usize::from(prefix[3] % 8),
            max_body_len: 4 * usize::from(prefix[4]),
            read_until_close: prefix[5] & 1 == 1,
        },
        _ => HttpLimits {
            read_until_close: true,
            ..HttpLimits::for_profile(Profile::Stn)
        },
    }
}

/// What parsing one byte stream (then EOF) produced.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    result: Result<HttpResponse, HttpError>,
    bytes_received: u64,
    excess: u64,
    interim: u32,
}

fn parse_three_ways(limits: HttpLimits, wire: &[u8], seed: u64) -> Parsed {
    let whole = parse(limits, [wire]);
    let bytewise = parse(limits, wire.chunks(1));
    assert_eq!(whole, bytewise, "byte-at-a-time parsing differs");
    let max = 1 + (seed % 97) as usize;
    let chunked = parse(limits, random_chunks(wire, seed, max));
    assert_eq!(whole, chunked, "chunked parsing differs");
    whole
}

fn parse<'a>(limits: HttpLimits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Parsed {
    let bound = limits.max_head_len.saturating_add(limits.max_body_len);
    let mut parser = ResponseParser::new(limits);
    let mut result: Option<Result<HttpResponse, HttpError>> = None;
    for chunk in chunks {
        let step = parser.feed(chunk);
        assert!(parser.buffered_len() <= bound, "parser holds too much");
        assert!(parser.body_received() <= limits.max_body_len);
        match (step, &result) {
            (Ok(Progress::Partial), None) => {}
            (Ok(Progress::Complete(response)), None) => {
                check_complete(&limits, &parser, &response);
                result = Some(Ok(response));
            }
            (Ok(Progress::AfterEnd), Some(Ok(_))) => {}
            (Err(e), None) => {
                assert_eq!(parser.error(), Some(&e));
                result = Some(Err(e));
            }
            (Err(e), Some(Err(first))) => {
                assert_eq!(&e, first, "poisoned parser changed its error")
            }
            (step, before) => panic!("feed returned {step:?} after {before:?}"),
        }
    }
    let result = match result {
        None => parser.finish_eof(),
        Some(Ok(response)) => {
            assert_eq!(parser.finish_eof(), Err(HttpError::AlreadyComplete));
            Ok(response)
        }
        Some(Err(e)) => {
            assert_eq!(parser.finish_eof(), Err(e.clone()));
            Err(e)
        }
    };
    match &result {
        Ok(response) => {
            assert!(parser.is_complete());
            check_complete(&limits, &parser, response);
        }
        Err(e) => assert_eq!(parser.error(), Some(e)),
    }
    // Counts are compared only for complete responses: how many bytes a
    // chunking had fed when the error struck legitimately differs.
    let ok = result.is_ok();
    Parsed {
        interim: if ok { parser.interim_responses() } else { 0 },
        bytes_received: if ok { parser.bytes_received() } else { 0 },
        excess: if ok { parser.excess_len() } else { 0 },
        result,
    }
}

fn check_complete(limits: &HttpLimits, parser: &ResponseParser, r: &HttpResponse) {
    assert!(r.body.len() <= limits.max_body_len);
    assert!(r.headers.len() <= limits.max_headers);
    assert!((100..=999).contains(&r.status) && !(r.status < 200 && r.status != 101));
    assert_eq!(parser.status(), Some(r.status));
    assert!(parser.head_complete());
    if matches!(r.status, 101 | 204 | 304) {
        assert!(r.body.is_empty(), "bodyless status with a body");
    }
    if let Some(n) = parser.expected_body_len() {
        assert_eq!(r.body.len() as u64, n);
    }
    assert!(parser.excess_len() <= parser.bytes_received());
}

/// A valid response to generate.
#[derive(Arbitrary, Debug)]
struct ResponseSpec {
    interim: u8,
    version11: bool,
    status: StatusChoice,
    reason: Vec<Word>,
    headers: Vec<(Word, Value)>,
    framing: Framing,
    body: Vec<u8>,
    bare_lf: bool,
    chunk_sizes: Vec<u8>,
    chunk_ext: bool,
    trailers: Vec<(Word, Value)>,
    excess: Vec<u8>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum StatusChoice {
    Ok,
    Bodyless(u8),
    Any(u16),
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    ContentLength,
    Chunked,
    UntilClose,
}

/// A token of 1..=8 safe characters.
#[derive(Arbitrary, Debug)]
struct Word(u64);

impl Word {
    fn text(&self) -> String {
        const ALPHABET: &[u8] =
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
        let len = 1 + (self.0 % 8) as usize;
        let mut v = self.0 / 8;
        (0..len)
            .map(|_| {
                let c = ALPHABET[(v % ALPHABET.len() as u64) as usize];
                v /= ALPHABET.len() as u64;
                char::from(c)
            })
            .collect()
    }
}

/// A header value: words joined by spaces, optionally padded with
/// whitespace (trimmed by the parser) and with a non-ASCII word.
#[derive(Arbitrary, Debug)]
struct Value {
    words: Vec<Word>,
    pad: bool,
    utf8: bool,
}

impl Value {
    /// (as sent, as parsed)
    fn text(&self) -> (String, String) {
        let mut words: Vec<String> = self.words.iter().take(6).map(Word::text).collect();
        if self.utf8 {
            words.push("h\u{e9}llo".into());
        }
        let parsed = words.join(" ");
        let sent = if self.pad {
            format!(" \t{parsed}\t ")
        } else {
            parsed.clone()
        };
        (sent, parsed)
    }
}

impl ResponseSpec {
    /// The bytes on the wire, the response they must parse to, and how many
    /// bytes follow its end.
    fn render(&self) -> (Vec<u8>, HttpResponse, usize) {
        let eol: &[u8] = if self.bare_lf { b"\n" } else { b"\r\n" };
        let mut wire = Vec::new();
        for i in 0..self.interim % 3 {
            wire.extend_from_slice(b"HTTP/1.1 100 Continue");
            wire.extend_from_slice(eol);
            if i == 1 {
                wire.extend_from_slice(b"X-Interim: yes");
                wire.extend_from_slice(eol);
            }
            wire.extend_from_slice(eol);
        }
        let status = match self.status {
            StatusChoice::Ok => 200,
            StatusChoice::Bodyless(n) => [101, 204, 304][usize::from(n % 3)],
            StatusChoice::Any(n) => 200 + n % 800,
        };
        let bodyless = matches!(status, 101 | 204 | 304);
        // Chunked needs HTTP/1.1; everything else works with either.
        let version = if self.version11 || self.framing == Framing::Chunked && !bodyless {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        };
        wire.extend_from_slice(match version {
            HttpVersion::Http11 => b"HTTP/1.1 ",
            HttpVersion::Http10 => b"HTTP/1.0 ",
        });
        wire.extend_from_slice(status.to_string().as_bytes());
        let reason: Vec<String> = self.reason.iter().take(4).map(Word::text).collect();
        if !reason.is_empty() {
            wire.push(b' ');
            wire.extend_from_slice(reason.join(" ").as_bytes());
        }
        wire.extend_from_slice(eol);

        let mut headers = Vec::new();
        for (name, value) in self.headers.iter().take(20) {
            let name = format!("X-{}", name.text());
            let (sent, parsed) = value.text();
            wire.extend_from_slice(format!("{name}:{sent}").as_bytes());
            wire.extend_from_slice(eol);
            headers.push((name, parsed));
        }
        let body: &[u8] = if bodyless { &[] } else { &self.body };
        let mut framing_header = |name: &str, value: String| {
            wire.extend_from_slice(format!("{name}: {value}").as_bytes());
            wire.extend_from_slice(eol);
            headers.push((name.to_owned(), value));
        };
        match self.framing {
            _ if bodyless => {}
            Framing::ContentLength => framing_header("Content-Length", body.len().to_string()),
            Framing::Chunked => framing_header("Transfer-Encoding", "chunked".into()),
            Framing::UntilClose => {}
        }
        wire.extend_from_slice(eol);

        let mut excess = 0;
        match self.framing {
            _ if bodyless => {
                wire.extend_from_slice(&self.excess);
                excess = self.excess.len();
            }
            Framing::ContentLength => {
                wire.extend_from_slice(body);
                wire.extend_from_slice(&self.excess);
                excess = self.excess.len();
            }
            Framing::Chunked => {
                let mut rest = body;
                let mut sizes = self.chunk_sizes.iter().cycle();
                while !rest.is_empty() {
                    let n = sizes.next().map_or(rest.len(), |s| 1 + usize::from(*s));
                    let (chunk, tail) = rest.split_at(n.min(rest.len()));
                    wire.extend_from_slice(format!("{:x}", chunk.len()).as_bytes());
                    if self.chunk_ext {
                        wire.extend_from_slice(b" ;ext=\"v\"");
                    }
                    wire.extend_from_slice(eol);
                    wire.extend_from_slice(chunk);
                    wire.extend_from_slice(eol);
                    rest = tail;
                }
                wire.extend_from_slice(b"0");
                wire.extend_from_slice(eol);
                for (name, value) in self.trailers.iter().take(4) {
                    wire.extend_from_slice(
                        format!("{}: {}", name.text(), value.text().0).as_bytes(),
                    );
                    wire.extend_from_slice(eol);
                }
                wire.extend_from_slice(eol);
                wire.extend_from_slice(&self.excess);
                excess = self.excess.len();
            }
            // Everything up to the close is body.
            Framing::UntilClose => wire.extend_from_slice(body),
        }
        let expected = HttpResponse {
            status,
            version,
            headers,
            body: bytes::Bytes::copy_from_slice(body),
        };
        (wire, expected, excess)
    }
}

/// Builds a raw-mode input.
fn raw(limits: u8, small: [u8; 4], seed: u16, wire: &[u8]) -> Vec<u8> {
    let mut out = vec![0, limits];
    out.extend_from_slice(&small);
    out.extend_from_slice(&seed.to_be_bytes());
    out.extend_from_slice(wire);
    out
}

/// Seed inputs: valid responses of every framing, interim heads, errors of
/// each family, tight limits, and generated-mode inputs.
pub(super) fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds: Vec<(String, Vec<u8>)> = vec![
        (
            "content_length".into(),
            raw(0, [0; 4], 7, b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nServer: stn\r\n\r\npong"),
        ),
        (
            "chunked_trailers".into(),
            raw(
                0,
                [0; 4],
                3,
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhi\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nexcess",
            ),
        ),
        (
            "interim_then_204".into(),
            raw(1, [0; 4], 11, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"),
        ),
        (
            "until_close_bare_lf".into(),
            raw(3, [0; 4], 5, b"HTTP/1.0 200 OK\nX-A: b\n\nbody until close"),
        ),
        (
            "status_503".into(),
            raw(0, [0; 4], 1, b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"),
        ),
        (
            "small_limits".into(),
            raw(2, [10, 2, 4, 0], 9, b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nContent-Length: 20\r\n\r\n"),
        ),
        (
            "bad_status_line".into(),
            raw(0, [0; 4], 2, b"HTTP/2 200 OK\r\n\r\n"),
        ),
        (
            "truncated_body".into(),
            raw(0, [0; 4], 4, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhi"),
        ),
    ];
    // Generated mode: any bytes after the prefix describe a valid response.
    for (i, bytes) in super::random_inputs(0x4854_5450, 4, 200).enumerate() {
        let mut input = vec![1, 0, 0, 0, 0, 0, 0, i as u8];
        input.extend(bytes);
        seeds.push((format!("generated_{i}"), input));
    }
    seeds
}
