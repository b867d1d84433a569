//! Starts the reference server in-process and sends tasks over both links.
//!
//! ```text
//! cargo run -p stn-tokio --example hello
//! RUST_LOG=stn=debug cargo run -p stn-tokio --example hello   # task and attempt events (target `stn`)
//! ```
#![allow(clippy::print_stdout)] // an example prints

use stn_server::{Server, ServerConfig};
use stn_tokio::proto::{Channel, Task};
use stn_tokio::Client;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();

    let server = Server::start(ServerConfig::default()).await?;
    let (short, long) = (server.short_addr().unwrap(), server.long_addr().unwrap());
    println!("server: short link {short}, long link {long}");

    let client = Client::builder()
        .endpoint("localhost") // resolved with tokio's resolver when the engine asks
        .short_link_port(short.port())
        .long_link_port(long.port())
        .build()?;
    let mut pushes = client.pushes();

    let reply = client
        .send(Task::new(8, "/mars/hello2", "hello, short link").channel(Channel::Short))
        .await?;
    println!("short link: {:?}", String::from_utf8_lossy(&reply.body));

    let done = client
        .send_detailed(Task::new(8, "", "hello, long link").channel(Channel::Long))
        .await;
    println!(
        "long link: {:?} after {} attempt(s)",
        String::from_utf8_lossy(&done.outcome?.body),
        done.attempts
    );

    // Many at once, from clones of the client.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .send(Task::new(8, "", format!("hello #{i}")).channel(Channel::Long))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    println!("10 concurrent long-link tasks answered");

    server.push(10001, "a server push");
    if let Some(push) = pushes.next().await {
        println!(
            "push {}: {:?}",
            push.cmd_id,
            String::from_utf8_lossy(&push.body)
        );
    }

    client.shutdown().await;
    server.shutdown().await;
    Ok(())
}
