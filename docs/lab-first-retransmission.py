"""First-retransmission intervals of TCP data segments in a tcpdump text
dump, split by whether the connection's SYN was retransmitted."""
import re, statistics, sys
first = {}; syn_retx = set(); synfirst = {}
res = {('client', True): [], ('client', False): [], ('server', True): [], ('server', False): []}
pat = re.compile(r'^(\S+) IP (\S+) > (\S+): Flags \[([^\]]*)\], seq (\d+)(?::(\d+))?')
for line in open(sys.argv[1]):
    m = pat.match(line)
    if not m:
        continue
    t, src, dst, flags, s, e = float(m[1]), m[2], m[3].rstrip(':'), m[4], m[5], m[6]
    if flags == 'S':
        (syn_retx.add if src in synfirst else lambda x: None)(src)
        synfirst.setdefault(src, t)
        continue
    if e is None:
        continue
    client = not src.endswith('.8080')
    conn = src if client else dst
    key = (src, dst, s, e)
    if key in first:
        if len(first[key]) == 1:
            res[('client' if client else 'server', conn in syn_retx)].append(t - first[key][0])
        first[key].append(t)
    else:
        first[key] = [t]
for (side, retx), v in res.items():
    if v:
        print(f"{side} data, {'SYN retransmitted' if retx else 'clean handshake'}: n={len(v)} "
              f"median {statistics.median(v):.3f} s, min {min(v):.3f}, max {max(v):.3f}")
