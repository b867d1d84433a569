use super::*;
use crate::codec::http::decode_response;
use crate::profile::Profile;
use proptest::prelude::*;
use quickcheck::quickcheck;

fn limits() -> HttpLimits {
    HttpLimits::default()
}

fn small() -> HttpLimits {
    HttpLimits {
        max_head_len: 256,
        max_headers: 8,
        max_body_len: 512,
        read_until_close: false,
    }
}

/// Feeds `chunks` in order; the first completion or error, else `finish_eof`.
/// Checks the memory bound after every step.
fn run_chunks(limits: HttpLimits, chunks: &[&[u8]]) -> Result<HttpResponse, HttpError> {
    let mut p = ResponseParser::new(limits);
    for chunk in chunks {
        let r = p.feed(chunk);
        assert!(p.buffered_len() <= limits.max_head_len.saturating_add(limits.max_body_len));
        match r? {
            Progress::Complete(resp) => return Ok(resp),
            Progress::Partial => {}
            Progress::AfterEnd => unreachable!("stopped at completion"),
        }
    }
    p.finish_eof()
}

fn whole(data: &[u8]) -> Result<HttpResponse, HttpError> {
    run_chunks(limits(), &[data])
}

fn bytewise(limits: HttpLimits, data: &[u8]) -> Result<HttpResponse, HttpError> {
    let chunks: Vec<&[u8]> = data.chunks(1).collect();
    run_chunks(limits, &chunks)
}

fn complete(p: &mut ResponseParser, data: &[u8]) -> HttpResponse {
    match p.feed(data) {
        Ok(Progress::Complete(r)) => r,
        other => panic!("expected a complete response, got {other:?}"),
    }
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn content_length_body() {
    let mut p = ResponseParser::new(limits());
    assert!(!p.first_byte_received());
    let first: &[u8] = b"HTTP/1.1 200 OK\r\nServer:  x \r\nContent-Length: 5\r\n\r\nhe";
    assert_eq!(p.feed(first).unwrap(), Progress::Partial);
    assert!(p.first_byte_received());
    assert!(p.head_complete());
    assert_eq!(p.status(), Some(200));
    assert_eq!(p.expected_body_len(), Some(5));
    assert_eq!(p.body_received(), 2);
    let r = complete(&mut p, b"lloEXTRA");
    assert_eq!(
        r,
        HttpResponse {
            status: 200,
            version: HttpVersion::Http11,
            headers: h(&[("Server", "x"), ("Content-Length", "5")]),
            body: Bytes::from_static(b"hello"),
        }
    );
    assert_eq!(p.excess_len(), 5);
    assert_eq!(p.feed(b"more").unwrap(), Progress::AfterEnd);
    assert_eq!(p.excess_len(), 9);
    assert_eq!(p.bytes_received(), first.len() as u64 + 8 + 4);
    assert!(p.is_complete());
    assert_eq!(p.finish_eof(), Err(HttpError::AlreadyComplete));
    assert_eq!(r.into_result().unwrap(), &b"hello"[..]);
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                 5;name=value;flag\r\nhello\r\n\
                 6 ; x=\"q;r\"\r\n world\r\n\
                 A\r\n0123456789\r\n\
                 0;last\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n";
    let r = whole(data).unwrap();
    assert_eq!(r.body, &b"hello world0123456789"[..]);
    assert_eq!(r.headers, h(&[("Transfer-Encoding", "chunked")]));
    assert_eq!(bytewise(limits(), data).unwrap(), r);
}

#[test]
fn chunked_completion_is_exact_and_excess_counted() {
    let mut p = ResponseParser::new(limits());
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r")
            .unwrap(),
        Progress::Partial
    );
    let r = complete(&mut p, b"\nJUNK");
    assert_eq!(r.body, &b"abc"[..]);
    assert_eq!(p.excess_len(), 4);
    assert_eq!(p.expected_body_len(), None);
}

#[test]
fn bare_lf_line_ends_are_accepted() {
    let r = whole(b"HTTP/1.0 200 OK\nContent-Length: 2\n\nok").unwrap();
    assert_eq!(
        (r.version, r.body.as_ref()),
        (HttpVersion::Http10, &b"ok"[..])
    );
    let r = whole(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n").unwrap();
    assert_eq!(r.body, &b"ok"[..]);
}

#[test]
fn zero_length_bodies() {
    let r = whole(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
    assert!(r.body.is_empty());
    let r = whole(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").unwrap();
    assert!(r.body.is_empty());
    // 204 and 304 have no body whatever the headers say.
    let mut p = ResponseParser::new(limits());
    let r = complete(
        &mut p,
        b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nabc",
    );
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert_eq!(p.excess_len(), 3);
    let r = whole(b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
    assert_eq!((r.status, r.body.len()), (304, 0));
    // Reason phrase is optional.
    let r = whole(b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n").unwrap();
    assert_eq!(r.status, 200);
    let r = whole(b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n").unwrap();
    assert_eq!(r.status, 200);
}

#[test]
fn interim_responses_are_skipped() {
    let mut p = ResponseParser::new(limits());
    assert_eq!(
        p.feed(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap(),
        Progress::Partial
    );
    assert!(!p.head_complete());
    assert_eq!(p.status(), None, "between heads");
    assert_eq!(p.interim_responses(), 1);
    assert_eq!(p.feed(b"HTTP/1.1 103").unwrap(), Progress::Partial);
    assert_eq!(p.status(), None, "status line incomplete");
    assert_eq!(p.feed(b" Early Hints\r\n").unwrap(), Progress::Partial);
    assert_eq!(p.status(), Some(103));
    assert_eq!(
        p.feed(b"Link: </a>\r\n\r\nHTTP/1.1 200 OK\r\n").unwrap(),
        Progress::Partial
    );
    assert_eq!(p.status(), Some(200));
    let r = complete(&mut p, b"Content-Length: 1\r\n\r\nx");
    assert_eq!(p.interim_responses(), 2);
    assert_eq!(
        (r.status, r.headers.clone(), r.body.as_ref()),
        (200, h(&[("Content-Length", "1")]), &b"x"[..])
    );
    // 101 is final and bodyless.
    let r = whole(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n").unwrap();
    assert_eq!(r.into_result(), Err(HttpError::Status(101)));
}

#[test]
fn non_200_is_a_status_error() {
    for (text, code) in [
        (
            &b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnah"[..],
            404,
        ),
        (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
            500,
        ),
        (
            b"HTTP/1.0 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
            302,
        ),
        (b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 201),
    ] {
        let r = whole(text).unwrap();
        assert_eq!(r.status, code);
        assert_eq!(r.into_result(), Err(HttpError::Status(code)));
    }
}

#[test]
fn head_too_large_fails_on_the_first_byte_over() {
    let lim = HttpLimits {
        max_head_len: 64,
        ..limits()
    };
    let mut head = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
    head.resize(64, b'a');
    let mut p = ResponseParser::new(lim);
    assert_eq!(p.feed(&head[..40]).unwrap(), Progress::Partial);
    assert_eq!(p.feed(&head[40..]).unwrap(), Progress::Partial);
    assert!(p.buffered_len() <= 64);
    assert_eq!(p.feed(b"a"), Err(HttpError::HeadTooLarge { limit: 64 }));
    assert!(p.error().is_some());
    assert_eq!(
        p.feed(b"\r\n\r\n"),
        Err(HttpError::HeadTooLarge { limit: 64 })
    );
    assert_eq!(p.finish_eof(), Err(HttpError::HeadTooLarge { limit: 64 }));
    assert_eq!(p.buffered_len(), 0);
    // A head of exactly the limit is fine.
    let mut exact = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: ".to_vec();
    exact.resize(64 - 4, b'a');
    exact.extend_from_slice(b"\r\n\r\nok");
    assert_eq!(run_chunks(lim, &[&exact]).unwrap().body, &b"ok"[..]);
    exact.insert(40, b'a');
    assert_eq!(
        run_chunks(lim, &[&exact]),
        Err(HttpError::HeadTooLarge { limit: 64 })
    );
    // A flood in one call fails without buffering it.
    let mut flood = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    flood.resize(1 << 20, b'a');
    let mut p = ResponseParser::new(lim);
    assert_eq!(p.feed(&flood), Err(HttpError::HeadTooLarge { limit: 64 }));
    // The limit applies per head, not across interim responses.
    let two = b"HTTP/1.1 100 Continue\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(
        two.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4,
        64
    );
    assert!(run_chunks(lim, &[two]).is_ok());
}

#[test]
fn an_interim_flood_fails_once_its_heads_exceed_one_head() {
    let lim = small(); // 256-byte heads
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n"; // 25 bytes
    let final_head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    // Ten interim heads (250 bytes) fit: the response parses.
    let mut wire = interim.repeat(10);
    wire.extend_from_slice(final_head);
    let r = run_chunks(lim, &[&wire]).expect("ten interim heads fit");
    assert_eq!(r.body, &b"ok"[..]);
    // The eleventh takes them over 256 bytes: a typed error, however chunked.
    let flood = interim.repeat(11);
    assert_eq!(
        run_chunks(lim, &[&flood]),
        Err(HttpError::InterimTooLarge { limit: 256 })
    );
    let pieces: Vec<&[u8]> = flood.chunks(7).collect();
    assert_eq!(
        run_chunks(lim, &pieces),
        Err(HttpError::InterimTooLarge { limit: 256 })
    );
    // An endless flood is rejected within the limit, without buffering it.
    let mut p = ResponseParser::new(lim);
    let endless = interim.repeat(40_000); // ~1 MiB
    assert_eq!(
        p.feed(&endless),
        Err(HttpError::InterimTooLarge { limit: 256 })
    );
    assert!(p.buffered_len() <= lim.max_head_len);
    assert_eq!(p.interim_responses(), 10);
}

#[test]
fn too_many_headers() {
    let lim = HttpLimits {
        max_headers: 2,
        ..limits()
    };
    assert!(run_chunks(
        lim,
        &[b"HTTP/1.1 200 OK\r\nA: 1\r\nContent-Length: 0\r\n\r\n"]
    )
    .is_ok());
    assert_eq!(
        run_chunks(lim, &[b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC"]),
        Err(HttpError::UnexpectedEof),
        "the count is checked when the third line is complete"
    );
    assert_eq!(
        run_chunks(lim, &[b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n"]),
        Err(HttpError::TooManyHeaders { limit: 2 })
    );
}

#[test]
fn body_too_large() {
    let lim = HttpLimits {
        max_body_len: 10,
        ..limits()
    };
    // Content-Length over the cap fails as soon as the head is complete.
    let mut p = ResponseParser::new(lim);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n"),
        Ok(Progress::Partial)
    );
    assert_eq!(
        p.feed(b"\r\n"),
        Err(HttpError::BodyTooLarge { len: 11, limit: 10 })
    );
    assert!(run_chunks(
        lim,
        &[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"]
    )
    .is_ok());
    // A chunk size fails at the digit that takes the total over the cap.
    let mut p = ResponseParser::new(lim);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n"),
        Ok(Progress::Partial)
    );
    assert_eq!(p.feed(b"2"), Ok(Progress::Partial));
    assert_eq!(p.feed(b"\r\n12\r\n"), Ok(Progress::Partial));
    assert_eq!(
        p.feed(b"1"),
        Err(HttpError::BodyTooLarge { len: 11, limit: 10 })
    );
    let mut p = ResponseParser::new(lim);
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0"),
        Ok(Progress::Partial)
    );
    assert_eq!(
        p.feed(b"0"),
        Ok(Progress::Partial),
        "leading zeros are fine"
    );
    assert_eq!(
        p.feed(b"1ffff"),
        Err(HttpError::BodyTooLarge {
            len: 0x1f,
            limit: 10
        })
    );
    // A close-delimited body over the cap.
    let lim = HttpLimits {
        read_until_close: true,
        ..lim
    };
    assert_eq!(
        run_chunks(lim, &[b"HTTP/1.1 200 OK\r\n\r\n01234", b"56789", b"x"]),
        Err(HttpError::BodyTooLarge { len: 11, limit: 10 })
    );
    assert_eq!(
        run_chunks(lim, &[b"HTTP/1.1 200 OK\r\n\r\n01234", b"56789"])
            .unwrap()
            .body
            .len(),
        10
    );
}

#[test]
fn content_length_rules() {
    let ok = |t: &[u8]| whole(t).map(|r| r.body);
    assert_eq!(
        ok(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nab").unwrap(),
        &b"ab"[..]
    );
    assert_eq!(
        ok(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nab").unwrap(),
        &b"ab"[..]
    );
    for bad in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    ] {
        assert_eq!(
            ok(bad),
            Err(HttpError::BadContentLength),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn transfer_encoding_rules() {
    // chunked wins over Content-Length (RFC 9112 §6.3).
    let r = whole(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n").unwrap();
    assert_eq!(r.body, &b"a"[..]);
    for (bad, err) in [
        (
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"[..],
            "unsupported Transfer-Encoding",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            "unsupported Transfer-Encoding",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "unsupported Transfer-Encoding",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
            "unsupported Transfer-Encoding",
        ),
        (
            b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "Transfer-Encoding in an HTTP/1.0 response",
        ),
    ] {
        assert_eq!(whole(bad), Err(HttpError::BadHeader(err)));
    }
}

#[test]
fn close_delimited_body_follows_mars_by_default() {
    let text: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody bytes";
    let mut p = ResponseParser::new(limits());
    assert_eq!(p.feed(text), Ok(Progress::Partial));
    assert!(p.head_complete());
    assert_eq!(p.body_received(), 10);
    assert_eq!(p.finish_eof(), Err(HttpError::UnexpectedEof));
    assert_eq!(p.feed(b"x"), Err(HttpError::UnexpectedEof), "poisoned");
    let lim = HttpLimits {
        read_until_close: true,
        ..limits()
    };
    let r = run_chunks(lim, &[text]).unwrap();
    assert_eq!(r.body, &b"body bytes"[..]);
}

#[test]
fn eof_before_the_end_is_an_error() {
    for partial in [
        &b""[..],
        b"HTTP/1.1 2",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcd",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
    ] {
        let lim = HttpLimits {
            read_until_close: true,
            ..limits()
        };
        assert_eq!(run_chunks(lim, &[partial]), Err(HttpError::UnexpectedEof));
    }
}

#[test]
fn bad_status_lines() {
    for bad in [
        &b"HTTP/2 200 OK\r\n\r\n"[..],
        b"HTTP/1.2 200 OK\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 200OK\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"HTTP/1.1 200 O\x01K\r\n\r\n",
        b"HTTP/1.1 200 O\rK\r\n\r\n",
        b"\r\nHTTP/1.1 200 OK\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
    ] {
        assert_eq!(
            whole(bad),
            Err(HttpError::BadStatusLine),
            "{}",
            String::from_utf8_lossy(bad)
        );
        assert_eq!(bytewise(limits(), bad), Err(HttpError::BadStatusLine));
    }
    // Garbage fails at once, without waiting for a line end.
    let mut p = ResponseParser::new(limits());
    assert_eq!(p.feed(b"<html"), Err(HttpError::BadStatusLine));
}

#[test]
fn bad_header_lines() {
    for (bad, why) in [
        (
            &b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n"[..],
            "header line without ':'",
        ),
        (
            b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n",
            "invalid header name",
        ),
        (b"HTTP/1.1 200 OK\r\n: v\r\n\r\n", "invalid header name"),
        (
            b"HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n",
            "obsolete line folding",
        ),
        (
            b"HTTP/1.1 200 OK\r\nA: x\ry\r\n\r\n",
            "control character in header value",
        ),
        (
            b"HTTP/1.1 200 OK\r\nA: x\0y\r\n\r\n",
            "control character in header value",
        ),
        (
            b"HTTP/1.1 200 OK\r\nA: \xff\xfe\r\n\r\n",
            "header value is not UTF-8",
        ),
    ] {
        assert_eq!(
            whole(bad),
            Err(HttpError::BadHeader(why)),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    // OWS is trimmed, tabs inside values kept, UTF-8 values kept.
    let r = whole(
        b"HTTP/1.1 200 OK\r\nA:\t x\ty \t\r\nB:\r\nC: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(
        r.headers[..3],
        h(&[("A", "x\ty"), ("B", ""), ("C", "caf\u{e9}")])[..]
    );
    assert_eq!(r.header("a"), Some("x\ty"));
    assert_eq!(r.header("missing"), None);
}

#[test]
fn bad_chunks() {
    let pre = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let lim = HttpLimits {
        max_body_len: usize::MAX,
        ..limits()
    };
    for (tail, err) in [
        (
            &b"g\r\n"[..],
            HttpError::BadChunk("chunk size is not hexadecimal"),
        ),
        (
            b"\r\n",
            HttpError::BadChunk("chunk size is not hexadecimal"),
        ),
        (
            b" 1\r\n",
            HttpError::BadChunk("chunk size is not hexadecimal"),
        ),
        (
            b"1x\r\n",
            HttpError::BadChunk("chunk size is not hexadecimal"),
        ),
        (
            b"1 x\r\n",
            HttpError::BadChunk("unexpected byte after chunk size"),
        ),
        (
            b"1\rx",
            HttpError::BadChunk("CR without LF in chunk-size line"),
        ),
        (
            b"2\r\nabc\r\n",
            HttpError::BadChunk("chunk data longer than its size"),
        ),
        (
            b"2\r\nab\rx",
            HttpError::BadChunk("CR without LF after chunk data"),
        ),
        (
            b"10000000000000000\r\n",
            HttpError::BadChunk("chunk size overflows 64 bits"),
        ),
        (
            b"0\r\nX: 1\rx",
            HttpError::BadChunk("CR without LF in trailer"),
        ),
        (
            b"0\r\n\rx",
            HttpError::BadChunk("CR without LF at end of chunked body"),
        ),
    ] {
        let data = [&pre[..], tail].concat();
        assert_eq!(
            run_chunks(lim, &[&data]),
            Err(err.clone()),
            "{}",
            String::from_utf8_lossy(tail)
        );
        assert_eq!(bytewise(lim, &data), Err(err));
    }
    // Long chunk lines and trailer sections are bounded by max_head_len.
    let lim = HttpLimits {
        max_head_len: 100,
        ..limits()
    };
    let long_ext = [&pre[..], b"1;", &[b'e'; 200][..]].concat();
    assert_eq!(
        run_chunks(lim, &[&long_ext]),
        Err(HttpError::BadChunk("chunk-size line too long"))
    );
    let long_trailer = [&pre[..], b"0\r\nX: ", &[b't'; 200][..]].concat();
    assert_eq!(
        run_chunks(lim, &[&long_trailer]),
        Err(HttpError::HeadTooLarge { limit: 100 })
    );
}

#[test]
fn limits_per_profile() {
    assert_eq!(HttpLimits::default(), HttpLimits::for_profile(Profile::Stn));
    let mars = HttpLimits::for_profile(Profile::Mars);
    assert_eq!(mars.max_head_len, 136 * 1024);
    assert_eq!(mars, HttpLimits::for_profile(Profile::Mars2017));
    for p in Profile::ALL {
        assert!(!HttpLimits::for_profile(p).read_until_close);
    }
}

#[test]
fn decode_response_helper() {
    assert_eq!(
        decode_response(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz", limits())
            .unwrap()
            .body,
        &b"z"[..]
    );
    assert_eq!(
        decode_response(b"HTTP/1.1 200 OK\r\n", limits()),
        Err(HttpError::UnexpectedEof)
    );
}

#[test]
fn deterministic() {
    let data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\n\r\n";
    let a = bytewise(limits(), data);
    let b = bytewise(limits(), data);
    assert_eq!(a, b);
    assert_eq!(a, whole(data));
}

// ---------- generated responses ----------

/// A valid response to generate, and what parsing it must give.
#[derive(Clone, Debug)]
struct Spec {
    interim: Vec<u16>,
    http11: bool,
    status: u16,
    /// (name, value, OWS before, OWS after)
    headers: Vec<(String, String, String, String)>,
    body: Vec<u8>,
    chunked: bool,
    also_content_length: bool,
    chunk_sizes: Vec<usize>,
    extensions: Vec<bool>,
    trailers: Vec<(String, String)>,
    crlf: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            proptest::collection::vec(prop::sample::select(vec![100u16, 102, 103]), 0..3),
            any::<bool>(),
            prop::sample::select(vec![200u16, 200, 200, 201, 204, 301, 304, 404, 500, 599]),
            proptest::collection::vec(
                (
                    "X-[A-Za-z0-9!#$%&'*+.^_`|~-]{0,10}",
                    "([!-~]([ -~\t]{0,20}[!-~])?)?",
                    "[ \t]{0,2}",
                    "[ \t]{0,2}",
                ),
                0..6,
            ),
            proptest::collection::vec(any::<u8>(), 0..1500),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            proptest::collection::vec(1usize..400, 1..8),
            proptest::collection::vec(any::<bool>(), 1..5),
            proptest::collection::vec(("X-T[a-z]{0,5}", "[ -~]{0,10}"), 0..3),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (interim, http11, status, headers, body),
                (chunked, cl, sizes, exts, trailers, crlf),
            )| Spec {
                interim,
                http11,
                status,
                headers,
                body,
                chunked,
                also_content_length: cl,
                chunk_sizes: sizes,
                extensions: exts,
                trailers,
                crlf,
            },
        )
}

/// Chunked encoding of `body`, cutting it by `sizes` (cycled).
fn encode_chunked(
    body: &[u8],
    sizes: &[usize],
    exts: &[bool],
    trailers: &[(String, String)],
    eol: &str,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        let ext = if exts[i % exts.len()] {
            ";ext=\"v\"; flag"
        } else {
            ""
        };
        let hex = if i % 2 == 0 {
            format!("{n:x}")
        } else {
            format!("{n:X}")
        };
        out.extend_from_slice(format!("{hex}{ext}{eol}").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(eol.as_bytes());
        rest = &rest[n..];
        i += 1;
    }
    out.extend_from_slice(format!("0{eol}").as_bytes());
    for (n, v) in trailers {
        out.extend_from_slice(format!("{n}: {v}{eol}").as_bytes());
    }
    out.extend_from_slice(eol.as_bytes());
    out
}

fn render(s: &Spec) -> (Vec<u8>, HttpResponse) {
    let eol = if s.crlf { "\r\n" } else { "\n" };
    let mut out = Vec::new();
    for code in &s.interim {
        out.extend_from_slice(
            format!("HTTP/1.1 {code} Interim{eol}X-Interim: 1{eol}{eol}").as_bytes(),
        );
    }
    let version = if s.http11 {
        HttpVersion::Http11
    } else {
        HttpVersion::Http10
    };
    let v = if s.http11 { "1.1" } else { "1.0" };
    out.extend_from_slice(format!("HTTP/{v} {} Some Reason{eol}", s.status).as_bytes());
    let mut headers = Vec::new();
    for (n, val, a, b) in &s.headers {
        out.extend_from_slice(format!("{n}:{a}{val}{b}{eol}").as_bytes());
        headers.push((n.clone(), val.clone()));
    }
    let bodyless = s.status == 204 || s.status == 304;
    let chunked = s.chunked && s.http11;
    let body = if bodyless { Vec::new() } else { s.body.clone() };
    let mut framing = Vec::new();
    if chunked {
        framing.push(("Transfer-Encoding".to_string(), "chunked".to_string()));
        if s.also_content_length {
            framing.push(("Content-Length".to_string(), "7".to_string()));
        }
    } else if !bodyless {
        framing.push(("Content-Length".to_string(), body.len().to_string()));
    }
    for (n, val) in framing {
        out.extend_from_slice(format!("{n}: {val}{eol}").as_bytes());
        headers.push((n, val));
    }
    out.extend_from_slice(eol.as_bytes());
    if chunked && !bodyless {
        out.extend(encode_chunked(
            &body,
            &s.chunk_sizes,
            &s.extensions,
            &s.trailers,
            eol,
        ));
    } else {
        out.extend_from_slice(&body);
    }
    (
        out,
        HttpResponse {
            status: s.status,
            version,
            headers,
            body: Bytes::from(body),
        },
    )
}

fn split_at<'a>(data: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut last = 0;
    for p in points {
        chunks.push(&data[last..p]);
        last = p;
    }
    chunks.push(&data[last..]);
    chunks
}

/// A valid response with a few random bytes overwritten or inserted.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        spec(),
        proptest::collection::vec(
            (any::<prop::sample::Index>(), any::<u8>(), any::<bool>()),
            1..4,
        ),
    )
        .prop_map(|(s, muts)| {
            let (mut data, _) = render(&s);
            for (at, byte, insert) in muts {
                let i = at.index(data.len() + 1);
                if insert || i == data.len() {
                    data.insert(i, byte);
                } else {
                    data[i] = byte;
                }
            }
            data
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Any split, byte-at-a-time included, parses exactly like the whole buffer.
    #[test]
    fn chunking_does_not_matter(s in spec(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let (data, expected) = render(&s);
        let lim = HttpLimits::default();
        let whole = run_chunks(lim, &[&data]);
        prop_assert_eq!(whole.as_ref(), Ok(&expected));
        prop_assert_eq!(run_chunks(lim, &split_at(&data, &cuts)), whole.clone());
        prop_assert_eq!(bytewise(lim, &data), whole);
    }

    /// Random bytes never panic, never exceed the memory bound, and the
    /// outcome does not depend on the chunking.
    #[test]
    fn garbage_is_handled(data in proptest::collection::vec(any::<u8>(), 0..1200),
                          cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let whole = run_chunks(small(), &[&data]);
        prop_assert_eq!(run_chunks(small(), &split_at(&data, &cuts)), whole.clone());
        prop_assert_eq!(bytewise(small(), &data), whole);
    }

    /// Garbage that starts like a response (gets past the status line).
    #[test]
    fn garbage_after_a_status_line(tail in proptest::collection::vec(prop::sample::select(
                                        b"\r\n :;0123456789abcdefXZ-\t\x00\xff".to_vec()), 0..1500),
                                   te in any::<bool>(),
                                   cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let lim = HttpLimits { read_until_close: te, ..small() };
        let pre: &[u8] = if te { b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" } else { b"HTTP/1.1 200 OK\r\n" };
        let data = [pre, &tail].concat();
        let whole = run_chunks(lim, &[&data]);
        prop_assert_eq!(run_chunks(lim, &split_at(&data, &cuts)), whole.clone());
        prop_assert_eq!(bytewise(lim, &data), whole);
    }

    /// Slightly corrupted valid responses: same properties, tight limits.
    #[test]
    fn mutated_responses_are_handled(data in mutated(),
                                     cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        for lim in [small(), HttpLimits::default()] {
            let whole = run_chunks(lim, &[&data]);
            prop_assert_eq!(run_chunks(lim, &split_at(&data, &cuts)), whole.clone());
            prop_assert_eq!(bytewise(lim, &data), whole);
        }
    }
}

quickcheck! {
    /// Chunked encoding of any body, cut anywhere, decodes to that body.
    fn chunked_roundtrip(body: Vec<u8>, sizes: Vec<u8>, exts: Vec<bool>) -> bool {
        let sizes: Vec<usize> = if sizes.is_empty() { vec![7] } else { sizes.iter().map(|&s| usize::from(s) + 1).collect() };
        let exts = if exts.is_empty() { vec![false] } else { exts };
        let mut data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        data.extend(encode_chunked(&body, &sizes, &exts, &[], "\r\n"));
        whole(&data).map(|r| r.body.to_vec()) == Ok(body)
    }
}
