//! `stn`: the stn command line.
//!
//! `stn serve` runs the reference server (Mars sample protocol) until Ctrl-C:
//!
//! ```text
//! stn serve --long 127.0.0.1:8081 --short 127.0.0.1:8080 --delay-ms 50 --response-size 1024
//! ```
//!
//! Logging goes through `tracing` to stderr; set `RUST_LOG` (e.g. `RUST_LOG=debug`) for
//! more detail than the default `info`.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use stn_tokio::server::{Fault, Server, ServerConfig, DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
use tracing_subscriber::EnvFilter;

/// stn: Mars-STN-style networking over tokio.
#[derive(Debug, Parser)]
#[command(name = "stn", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the reference server (long link and short link) until Ctrl-C.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Long-link (framed TCP) listen address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    long: SocketAddr,
    /// Short-link (HTTP/1.1) listen address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    short: SocketAddr,
    /// Serve only the long link.
    #[arg(long, conflicts_with = "no_long")]
    no_short: bool,
    /// Serve only the short link.
    #[arg(long)]
    no_long: bool,
    /// Processing delay before each hello / CGI response, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 0)]
    delay_ms: u64,
    /// Response body size in bytes (default: echo the request body).
    #[arg(long, value_name = "B")]
    response_size: Option<usize>,
    /// Push a frame to every long-link client every N milliseconds.
    #[arg(long, value_name = "N")]
    push_every_ms: Option<u64>,
    /// Long-link command id answered as hello.
    #[arg(long, value_name = "ID", default_value_t = DEFAULT_HELLO_CMD_ID)]
    hello_cmd_id: u32,
    /// Long-link client version expected in (and written to) every frame.
    #[arg(long, value_name = "V", default_value_t = 0)]
    client_version: u32,
    /// CGI path answered on the short link (repeatable).
    #[arg(long = "cgi", value_name = "PATH", default_values_t = [DEFAULT_CGI_PATH.to_owned()])]
    cgi_paths: Vec<String>,
    /// Largest long-link frame body accepted, in bytes.
    #[arg(long, value_name = "B", default_value_t = ServerConfig::default().max_frame_body)]
    max_frame_body: usize,
    /// Misbehave for tests: none, never-respond, reset-mid-response, garbage,
    /// oversize-length.
    #[arg(long, value_name = "FAULT", default_value_t = Fault::None)]
    fault: Fault,
}

impl ServeArgs {
    fn config(&self) -> anyhow::Result<ServerConfig> {
        if self.push_every_ms == Some(0) {
            anyhow::bail!("--push-every-ms must be positive");
        }
        Ok(ServerConfig {
            long_addr: (!self.no_long).then_some(self.long),
            short_addr: (!self.no_short).then_some(self.short),
            delay: Duration::from_millis(self.delay_ms),
            response_size: self.response_size,
            hello_cmd_id: self.hello_cmd_id,
            push_every: self.push_every_ms.map(Duration::from_millis),
            client_version: self.client_version,
            max_frame_body: self.max_frame_body,
            cgi_paths: self.cgi_paths.clone(),
            fault: self.fault,
            ..ServerConfig::default()
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs go to stderr, coloured only on a terminal.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    let server = Server::start(config).await.context("starting the server")?;
    tracing::info!(
        long = ?server.long_addr(),
        short = ?server.short_addr(),
        delay_ms = args.delay_ms,
        response_size = ?args.response_size,
        fault = %args.fault,
        "stn server running; Ctrl-C to stop"
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    tracing::info!(stats = ?server.stats(), "shutting down");
    server.shutdown().await;
    Ok(())
}
