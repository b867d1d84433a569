//! Starts the reference server (stn-server, on a tokio runtime thread) and
//! sends tasks over both links with the async-std client, then once more
//! with the same client on smol's executor.
//!
//! ```text
//! cargo run -p stn-asyncstd --example hello-asyncstd
//! RUST_LOG=stn=debug cargo run -p stn-asyncstd --example hello-asyncstd   # task and attempt events (target `stn`)
//! ```
#![allow(clippy::print_stdout)] // an example prints

use stn_asyncstd::proto::{Channel, Task};
use stn_asyncstd::Client;
use stn_server::{Server, ServerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();

    // The server is test infrastructure written for tokio: give it a runtime
    // of its own; the client below never touches tokio.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let server = server_rt.block_on(Server::start(ServerConfig::default()))?;
    let (short, long) = (server.short_addr().unwrap(), server.long_addr().unwrap());
    println!("server: short link {short}, long link {long}");

    async_std::task::block_on(async {
        let client = Client::builder()
            .endpoint("localhost") // resolved with async-std's resolver when the engine asks
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
                async_std::task::spawn(async move {
                    client
                        .send(Task::new(8, "", format!("hello #{i}")).channel(Channel::Long))
                        .await
                })
            })
            .collect();
        for t in tasks {
            t.await?;
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
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;

    // The same client on smol's executor (async-std's successor).
    smol::block_on(async {
        let client = stn_asyncstd::SmolClient::builder()
            .endpoint("127.0.0.1")
            .short_link_port(short.port())
            .long_link_port(long.port())
            .build()?;
        let reply = client
            .send(Task::new(8, "", "hello from smol").channel(Channel::Long))
            .await?;
        println!(
            "smol, long link: {:?}",
            String::from_utf8_lossy(&reply.body)
        );
        client.shutdown().await;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;

    server_rt.block_on(server.shutdown());
    Ok(())
}
