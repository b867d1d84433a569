//! stn's client against the Mars sample server's captured replies, on
//! every adapter: the scripted sample (`tests/mars_sample`) plays the
//! sample's part.

use std::sync::mpsc;
use std::time::Duration;

use stn_driver::proto::codec::longlink::NOOP_CMD_ID;
use stn_driver::proto::{Channel, Task};
use stn_driver::Client;

use super::{bounded, Harness};
use crate::mars_sample::{
    hello_request, sample_proxy, sample_web, scripted, ProxyRead, HELLO_RESPONSE, SAMPLE_VERSION,
};

/// The short link completes against the sample web server's captured reply
/// (protobuf body, chunked with a Content-length).
pub async fn mars_sample_short_link<H: Harness>() {
    let (addr, _server) = scripted(sample_web);
    let client = Client::<H::Rt>::builder()
        .socket_addr(addr)
        .build()
        .expect("build");
    let task = Task::new(8, "/mars/hello2", hello_request())
        .channel(Channel::Short)
        .retry_count(0);
    let reply = client.send(task).await.expect("the sample's 200");
    assert_eq!(&reply.body[..], HELLO_RESPONSE);
    client.shutdown().await;
}

/// A client at the sample's version 200 whose hello (protobuf body, no
/// retry) the scripted sample proxy answered, and the proxy's reads.
async fn hello_through_the_sample_proxy<H: Harness>(
    one_frame_per_read: bool,
) -> (Client<H::Rt>, mpsc::Receiver<ProxyRead>) {
    let (reads_tx, reads) = mpsc::channel();
    let (addr, _server) = scripted(sample_proxy(reads_tx, one_frame_per_read));
    let client = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .long_link_port(addr.port())
        .configure(|c| c.long_mut().codec.client_version = SAMPLE_VERSION)
        .build()
        .expect("build");
    let task = Task::new(8, "", hello_request())
        .channel(Channel::Long)
        .retry_count(0);
    let reply = bounded::<H, _>(Duration::from_secs(20), client.send(task))
        .await
        .expect("bounded")
        .expect("the sample's answer");
    assert_eq!(&reply.body[..], HELLO_RESPONSE);
    (client, reads)
}

/// The long link at the sample's version 200 completes against the sample
/// proxy's captured reply (framing, version, seq = task id). The proxy here
/// frames by length: the real one's one-frame-per-read is what
/// [`mars_no_noop_behind_a_request`] checks.
pub async fn mars_sample_long_link<H: Harness>() {
    let (client, reads) = hello_through_the_sample_proxy::<H>(false).await;
    let hello = reads
        .try_iter()
        .find(|r| r.frame.cmd_id == 8)
        .expect("the proxy read the hello");
    assert_eq!(&hello.frame.body[..], &hello_request()[..]);
    client.shutdown().await;
}

/// stn never writes a noop right behind a request: the sample proxy would
/// drop it (one frame per read), and the link would then die of a heartbeat
/// timeout. The hello must be alone in its read, and no noop may follow
/// before the hello's answer.
pub async fn mars_no_noop_behind_a_request<H: Harness>() {
    let (client, reads) = hello_through_the_sample_proxy::<H>(true).await;
    client.shutdown().await;
    // Like Mars, the first noop is due one heartbeat interval (minutes)
    // after the last write, so none may have reached the proxy at all, in
    // the hello's read or in one of its own.
    let seen: Vec<ProxyRead> = reads.try_iter().collect();
    assert!(seen.iter().any(|r| r.frame.cmd_id == 8), "{seen:?}");
    assert!(
        seen.iter()
            .all(|r| r.dropped == 0 && r.frame.cmd_id != NOOP_CMD_ID),
        "a noop went out right behind the hello: {seen:?}"
    );
}
