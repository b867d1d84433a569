//! A black hole ordered first that loses a won race within the outpaced
//! threshold is still judged (verdict probes): at 40 ms RTT the next
//! address starts one stagger (130 ms) later and wins ~45 ms after, before
//! the ~190 ms threshold, so without a verdict the black hole would stay
//! "new", the random merge would put a black hole first again and every
//! call would pay a stagger and an extra connect.

use stn_sim::bench::suites::find_cell;

#[test]
fn black_holes_that_lose_within_the_threshold_sink_in_the_order() {
    let key = "ios rtt40 loss5% 3g jit0 bbl out-5.1s fresh retry-default";
    let cell = find_cell(key, false).expect("cell");
    for seed in 1..=4 {
        let (mut stn, mut mars, mut mars_2017) = (0.0, 0.0, 0.0);
        cell.run(seed, |r| match r.client.as_str() {
            "stn" => stn += r.total_s,
            "mars" => mars += r.total_s,
            "mars-2017" => mars_2017 += r.total_s,
            _ => {}
        });
        let best = f64::min(mars, mars_2017);
        // Before the verdict probes stn missed the ~1.10x gate at seeds 1, 2
        // and 4 (1.11-1.23x); measured with them: 0.89-1.02x.
        assert!(
            stn <= 1.10 * best,
            "seed {seed}: stn {stn:.2} s vs mars {mars:.2} s, mars-2017 {mars_2017:.2} s"
        );
    }
}
