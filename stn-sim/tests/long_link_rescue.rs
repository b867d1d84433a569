//! stn's long-link rescue: a retry-0 call whose link stalls (the long
//! link's 12 s first-packet timer drops it) is sent once more on the next
//! connection within its 20 s deadline. Pinned on the matrix cell where the
//! call in flight when a 15.5 s outage starts needs it: without the rescue
//! that call fails, and at retry 0 the failures count against the gate.

use stn_sim::bench::gate::verdict;
use stn_sim::bench::record::RunRecord;
use stn_sim::bench::suites::find_cell;

#[test]
fn the_call_caught_by_the_outage_is_rescued_on_the_long_link() {
    let key = "ios rtt300 ge10%/300ms lte jit0 bbl out-15.5s long retry0";
    let cell = find_cell(key, false).expect("cell");
    for seed in [1, 2, 3] {
        let mut records: Vec<RunRecord> = Vec::new();
        cell.run(seed, |r| records.push(r));
        let mine: Vec<&RunRecord> = records.iter().collect();
        let v = verdict(&cell, &mine).expect("verdict");
        assert!(
            v.met(),
            "{key} seed {seed}: stn {:.2} s, {:.1} failed / 100 vs best {:.2} s, {:.1} / 100",
            v.stn.time_s,
            v.stn.fail_per_100,
            v.best.time_s,
            v.best_fail_per_100
        );
    }
}
