//! Packet loss and outages with nftables, applied on the *input* hook of
//! both namespaces: a packet is really sent over the veth and lost on
//! arrival, as on a lossy link (dropping on output would instead hand the
//! sender's TCP a local error).

use super::netns::{run, Names};

/// Table holding the random-loss rules (with counters).
const LOSS_TABLE: &str = "stnlab_loss";
/// Table holding the drop-everything outage rule.
const OUTAGE_TABLE: &str = "stnlab_outage";

fn nft(ns: &str, script: &str) -> anyhow::Result<String> {
    run("ip", &["netns", "exec", ns, "nft", "-f", "-"], Some(script))
}

fn sides(names: &Names) -> [(&str, &str); 2] {
    [
        (names.srv_ns.as_str(), names.srv_if.as_str()),
        (names.cli_ns.as_str(), names.cli_if.as_str()),
    ]
}

/// Drops `percent`% of the packets arriving in each namespace (so each
/// direction independently), replacing any earlier rule and zeroing the
/// counters. 0 keeps only the counting rule.
pub(super) fn set_loss(names: &Names, percent: u8) -> anyhow::Result<()> {
    for (ns, dev) in sides(names) {
        let drop_rule = if percent == 0 {
            String::new()
        } else {
            format!("iifname \"{dev}\" numgen random mod 100 < {percent} counter drop\n")
        };
        // Declare, delete, recreate: one atomic transaction whether or not
        // the table existed.
        let script = format!(
            "table inet {LOSS_TABLE}\n\
             delete table inet {LOSS_TABLE}\n\
             table inet {LOSS_TABLE} {{\n\
               chain input {{\n\
                 type filter hook input priority 0; policy accept;\n\
                 iifname \"{dev}\" counter\n\
                 {drop_rule}\
               }}\n\
             }}\n"
        );
        nft(ns, &script)?;
    }
    Ok(())
}

/// Packets that arrived on the veth in both namespaces since the last
/// [`set_loss`], and how many of them the loss rule dropped.
pub(super) fn loss_counters(names: &Names) -> anyhow::Result<(u64, u64)> {
    let (mut seen, mut dropped) = (0, 0);
    for (ns, _) in sides(names) {
        let listing = run(
            "ip",
            &[
                "netns", "exec", ns, "nft", "list", "chain", "inet", LOSS_TABLE, "input",
            ],
            None,
        )?;
        let counts = packet_counts(&listing);
        seen += counts.first().copied().unwrap_or(0);
        dropped += counts.get(1).copied().unwrap_or(0);
    }
    Ok((seen, dropped))
}

/// The `counter packets N` values of a listing, in rule order.
fn packet_counts(listing: &str) -> Vec<u64> {
    let mut counts = Vec::new();
    let mut words = listing.split_whitespace();
    while let Some(w) = words.next() {
        if w == "packets" {
            if let Some(n) = words.next().and_then(|n| n.parse().ok()) {
                counts.push(n);
            }
        }
    }
    counts
}

/// Removes the loss rules.
pub(super) fn clear_loss(names: &Names) -> anyhow::Result<()> {
    for (ns, _) in sides(names) {
        nft(
            ns,
            &format!("table inet {LOSS_TABLE}\ndelete table inet {LOSS_TABLE}\n"),
        )?;
    }
    Ok(())
}

/// Runs `script(dev)` in both namespaces at once, so both directions
/// switch within a few milliseconds of each other.
fn on_both_sides(names: &Names, script: impl Fn(&str) -> String + Sync) -> anyhow::Result<()> {
    let script = &script;
    std::thread::scope(|scope| {
        let runs: Vec<_> = sides(names)
            .into_iter()
            .map(|(ns, dev)| scope.spawn(move || nft(ns, &script(dev))))
            .collect();
        runs.into_iter().try_for_each(|run| {
            run.join()
                .map_err(|_| anyhow::anyhow!("an nft thread panicked"))?
                .map(drop)
        })
    })
}

/// Starts a 100% outage: every packet arriving on the veth is dropped, in
/// both namespaces.
pub(super) fn outage_on(names: &Names) -> anyhow::Result<()> {
    on_both_sides(names, |dev| {
        format!(
            "table inet {OUTAGE_TABLE} {{\n\
               chain input {{\n\
                 type filter hook input priority -10; policy accept;\n\
                 iifname \"{dev}\" counter drop\n\
               }}\n\
             }}\n"
        )
    })
}

/// Ends the outage (also safe when none is on).
pub(super) fn outage_off(names: &Names) -> anyhow::Result<()> {
    on_both_sides(names, |_| {
        format!("table inet {OUTAGE_TABLE}\ndelete table inet {OUTAGE_TABLE}\n")
    })
}

#[cfg(test)]
mod tests {
    use super::packet_counts;

    #[test]
    fn counters_are_read_in_rule_order() {
        let listing = "table inet stnlab_loss {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tiifname \"x-s\" counter packets 120 bytes 9000\n\t\tiifname \"x-s\" numgen random mod 100 < 10 counter packets 13 bytes 800 drop\n\t}\n}\n";
        assert_eq!(packet_counts(listing), vec![120, 13]);
        assert!(packet_counts("table inet t { }").is_empty());
    }
}
