//! Just enough IPv4/TCP header reading for the emulator's counters: which
//! packets are IPv4 (the only ones it forwards) and which are a client's
//! connection-opening SYN. Never panics and never allocates, whatever the
//! bytes.

/// What the emulator needs to know about one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PacketKind {
    /// Not an IPv4 packet (IPv6 router solicitations and the like), or too
    /// short to be one: not forwarded.
    NotIpv4,
    /// A TCP SYN without ACK: a connection attempt (or its retransmission,
    /// which carries the same source port and initial sequence number).
    Syn {
        /// TCP source port.
        src_port: u16,
        /// Initial sequence number.
        isn: u32,
    },
    /// Any other IPv4 packet.
    Other,
}

const IPV4_MIN_HEADER: usize = 20;
const TCP_MIN_HEADER: usize = 20;
const PROTO_TCP: u8 = 6;
const FLAG_SYN: u8 = 0x02;
const FLAG_ACK: u8 = 0x10;

/// Classifies one IP packet as read from a TUN device (no packet-info
/// prefix).
pub(crate) fn classify(packet: &[u8]) -> PacketKind {
    let Some(&first) = packet.first() else {
        return PacketKind::NotIpv4;
    };
    if first >> 4 != 4 || packet.len() < IPV4_MIN_HEADER {
        return PacketKind::NotIpv4;
    }
    let ihl = usize::from(first & 0x0f) * 4;
    // Only the first fragment carries the TCP header.
    let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
    if packet[9] != PROTO_TCP || ihl < IPV4_MIN_HEADER || fragment_offset != 0 {
        return PacketKind::Other;
    }
    let Some(tcp) = packet.get(ihl..).filter(|t| t.len() >= TCP_MIN_HEADER) else {
        return PacketKind::Other;
    };
    let flags = tcp[13];
    if flags & FLAG_SYN != 0 && flags & FLAG_ACK == 0 {
        PacketKind::Syn {
            src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
            isn: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        }
    } else {
        PacketKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 40-byte IPv4+TCP packet with these TCP flags.
    fn tcp_packet(flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&40u16.to_be_bytes());
        p[9] = PROTO_TCP;
        p[20..22].copy_from_slice(&40_000u16.to_be_bytes());
        p[22..24].copy_from_slice(&8080u16.to_be_bytes());
        p[24..28].copy_from_slice(&0xdead_beef_u32.to_be_bytes());
        p[32] = 0x50;
        p[33] = flags;
        p
    }

    #[test]
    fn syn_is_a_connect_and_syn_ack_is_not() {
        assert_eq!(
            classify(&tcp_packet(FLAG_SYN)),
            PacketKind::Syn {
                src_port: 40_000,
                isn: 0xdead_beef
            }
        );
        assert_eq!(
            classify(&tcp_packet(FLAG_SYN | FLAG_ACK)),
            PacketKind::Other
        );
        assert_eq!(classify(&tcp_packet(FLAG_ACK)), PacketKind::Other);
    }

    #[test]
    fn non_ipv4_and_truncated_packets_are_safe() {
        assert_eq!(classify(&[]), PacketKind::NotIpv4);
        assert_eq!(classify(&[0x60; 40]), PacketKind::NotIpv4);
        assert_eq!(classify(&[0x45; 10]), PacketKind::NotIpv4);
        // A TCP header cut short, and a header length pointing past the end.
        let p = tcp_packet(FLAG_SYN);
        assert_eq!(classify(&p[..30]), PacketKind::Other);
        let mut long_ihl = p.clone();
        long_ihl[0] = 0x4f;
        assert_eq!(classify(&long_ihl), PacketKind::Other);
        // A non-first fragment has no TCP header.
        let mut frag = p;
        frag[6] = 0x00;
        frag[7] = 0x10;
        assert_eq!(classify(&frag), PacketKind::Other);
        // Every prefix of every packet is classified without panicking.
        for flags in [0, FLAG_SYN, 0xff] {
            let p = tcp_packet(flags);
            for n in 0..=p.len() {
                let _ = classify(&p[..n]);
            }
        }
    }
}
