//! `cargo bench --bench goal_load -- [--scale K] [--duration SECS] [--short] [--debug]`: the
//! goal load of issue 40 run against the scale model of AWS (the local AWS stack with every
//! limit divided by K), at 1/K of the goal. `docs/performance.md`, "The goal load on the scale
//! model", says what it runs, what it prints and what it measured.
//!
//! It prints a table per phase and resource, then one JSON line (`{"goal_load": {...}}`) with
//! every figure; it exits 1 when a lapse was lost or sent twice, 2 on bad arguments or a stack
//! that does not start.

mod driver;

fn main() {
    // `cargo bench` passes `--bench` to every bench target; it means nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let options = match driver::Options::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("goal_load: {e}\n\n{}", driver::USAGE);
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("goal_load: no async runtime: {e}");
            std::process::exit(2);
        }
    };
    match runtime.block_on(driver::run(&options)) {
        Ok(report) => {
            print!("{}", report.table());
            println!("{}", report.json_line());
            if report.lost() > 0 || report.sent_twice() > 0 {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("goal_load: {e:#}");
            std::process::exit(2);
        }
    }
}
