//! cauda: a tail-latency lab for Linux.
//!
//! The data flows one way: probe → recorder → run file → analysis → output.
//! [`run`] is the program's outline; `main` only maps its result to an
//! exit code, so tests can call it in-process.

pub mod analyze;
pub mod cli;
pub mod error;
pub mod formats;
pub mod host;
pub mod input;
pub mod lab;
pub mod model;
pub mod output;
pub mod probe;
pub mod record;
pub mod report;
pub mod sys;
pub mod tune;
pub mod units;

use std::io::Write;

use anyhow::Result;

use cli::{AnalyzeArgs, Cli, Command, CompareArgs, ConvertArgs, MergeArgs, TimerArgs};
use error::Outcome;
use model::{Format, Loaded};
use probe::session::Destination;
use record::StopFlag;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Timer(args) => timer(args),
        Command::Lab(args) => lab::run(&args.config(), &StopFlag::on_signals()?),
        Command::Disk(args) => disk(args),
        Command::Net(args) => net(args),
        Command::Broker(args) => broker(args),
        Command::Serve(args) => serve(args),
        Command::Analyze(args) => analyze(args),
        Command::Compare(args) => compare(args),
        Command::Convert(args) => convert(args),
        Command::Merge(args) => merge(args),
        Command::Host(args) => host(args),
        Command::Hiccup(args) => hiccup(args),
        Command::Kernel(args) => kernel(args),
        Command::Report(args) => report_html(args),
    }
}

fn host(args: cli::HostArgs) -> Result<Outcome> {
    match args.command {
        cli::HostCommand::Audit(args) => {
            host::audit::command(args.root.as_deref(), args.profile, args.json)?
        }
        cli::HostCommand::Tune(args) => tune::tune(args.request())?,
        cli::HostCommand::Rollback(args) => tune::rollback(args.request())?,
        cli::HostCommand::HoldLatency(args) => {
            return host::tune::hold::run(args.max_latency, &args.command).map(Outcome::Exit);
        }
    }
    Ok(Outcome::Done)
}

fn hiccup(args: cli::HiccupArgs) -> Result<Outcome> {
    let config = probe::hiccup::HiccupConfig {
        runtime_ns: args.runtime,
        sleep_ns: args.sleep,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
        interval_length_ns: args.output.interval_length,
    };
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        eprintln!(
            "cauda hiccup: {} thread(s) sleeping {} for {} — Ctrl-C stops and saves",
            config.cpus.len().max(1),
            units::format_duration_compact(config.sleep_ns),
            units::format_duration_compact(config.runtime_ns),
        );
    }
    let finished = probe::hiccup::run(&config, &destination, &stop)?;
    finish_run(finished, args.output.quiet)
}

fn kernel(args: cli::KernelArgs) -> Result<Outcome> {
    let config = args.config()?;
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        let what: Vec<&str> = config.sources.iter().map(|s| s.name()).collect();
        eprintln!(
            "cauda kernel: {} on {} — Ctrl-C stops and saves",
            what.join(", "),
            config.device.as_deref().unwrap_or("every device")
        );
    }
    let (finished, code) = probe::kernel::run(&config, &destination, &stop)?;
    let outcome = finish_run(finished, args.output.quiet)?;
    Ok(match code {
        Some(code) if code != 0 && outcome == Outcome::Done => Outcome::Exit(code),
        _ => outcome,
    })
}

fn destination(output: &cli::RunOutputArgs) -> Result<Destination> {
    probe::session::observe_by_default(!output.no_host_counters, !output.no_self_thread);
    let mut labels = std::collections::BTreeMap::new();
    for cli::Label(key, value) in &output.labels {
        if let Some(first) = labels.insert(key.clone(), value.clone()) {
            return Err(error::input_error(format!(
                "--label {key}: given twice ({first}, {value}); give each key once"
            )));
        }
    }
    if output.metrics_listen.is_some()
        && let Some(key) = labels
            .keys()
            .find(|k| k.starts_with("__") || probe::live::RESERVED_LABELS.contains(&k.as_str()))
    {
        return Err(error::input_error(format!(
            "--label {key}: with --metrics-listen this name is cauda's own Prometheus label \
             (or reserved by Prometheus); choose another key"
        )));
    }
    if let Some(shard) = output.shard()? {
        let given = labels.insert("shard".to_string(), shard.label());
        if given.is_some_and(|g| g != shard.label()) {
            return Err(error::input_error(format!(
                "--label shard: the run is shard {} (--shard or JOB_COMPLETION_INDEX); drop the label",
                shard.label()
            )));
        }
    }
    Ok(Destination {
        run_file: output.output.clone(),
        hlog: output.hlog.clone(),
        force: output.force,
        labels,
        start_at_unix_ns: output.start_at,
        metrics: output.metrics_listen,
        kernel: {
            let mut sources = output.kernel.clone();
            sources.sort();
            sources.dedup();
            sources
        },
    })
}

fn timer(args: TimerArgs) -> Result<Outcome> {
    let threads = args
        .threads
        .unwrap_or_else(|| args.cpus.as_ref().map_or(1, |c| c.0.len().max(1)));
    let config = probe::timer::TimerConfig {
        interval_ns: args
            .output
            .sharded_rate(args.rate)?
            .map_or(args.interval, |rate| rate.period_ns().round() as u64),
        runtime_ns: args.runtime,
        threads,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
        priority: args.priority,
        arrivals: args.arrivals,
        seed: args.output.sharded_seed(args.seed)?,
        lock_memory: !args.no_mlock,
        cpu_dma_latency_us: args
            .cpu_dma_latency
            .map(|ns| i32::try_from(ns / 1_000).unwrap_or(i32::MAX)),
        timer_slack_ns: 1,
        idle_sweep_ns: args.idle_sweep.then(|| {
            args.idle_lengths
                .map(|l| l.0)
                .unwrap_or_else(|| probe::timer::DEFAULT_IDLE_LENGTHS_NS.to_vec())
        }),
        interval_length_ns: args.output.interval_length,
    };
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        eprintln!(
            "cauda timer: {} thread(s), {} for {} — Ctrl-C stops and saves",
            config.threads,
            match &config.idle_sweep_ns {
                None => format!(
                    "every {}",
                    units::format_duration_compact(config.interval_ns)
                ),
                Some(l) => format!("idle sweep over {} lengths", l.len()),
            },
            units::format_duration_compact(config.runtime_ns),
        );
    }
    let finished = probe::timer::run(&config, &destination, &stop)?;
    finish_run(finished, args.output.quiet)
}

fn broker(args: cli::BrokerArgs) -> Result<Outcome> {
    let config = args.config()?;
    if args.acks_matrix {
        return lab::matrix::run(&config, &destination(&args.output)?, args.matrix_rounds);
    }
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        eprintln!(
            "cauda broker: {} topic {}, acks={}, {} B records, {} producer(s), {} consumer(s), {} for {} — Ctrl-C stops and saves",
            config.bootstrap,
            config.topic,
            config.acks.name(),
            config.size,
            config.producers,
            config.consumers,
            match config.rate_per_s {
                Some(r) => format!("{r}/s open loop"),
                None => "closed loop".into(),
            },
            units::format_duration_compact(config.runtime_ns),
        );
    }
    let finished = probe::broker::run(&config, &destination, &stop)?;
    if !args.output.quiet
        && let Some(b) = &finished.run.broker
    {
        let r = &b.records;
        eprintln!(
            "records: {} sent, {} acked, {} failed, {} in flight at stop; {} consumed, {} lost, {} duplicate, {} out of order",
            r.sent,
            r.acked,
            r.failed,
            r.in_flight,
            r.consumed,
            r.lost,
            r.duplicates,
            r.out_of_order
        );
    }
    finish_run(finished, args.output.quiet)
}

fn net(args: cli::NetArgs) -> Result<Outcome> {
    let config = probe::net::NetConfig {
        target: args.connect,
        loopback: args.loopback,
        proto: args.proto,
        size: args.size,
        response_size: args.response_size.unwrap_or(args.size),
        conns: args.conns,
        runtime_ns: args.runtime,
        rate_per_s: args.output.sharded_rate(args.rate)?.map(|r| r.per_second),
        gap_ns: args.gap.unwrap_or(0),
        timeout_ns: args.timeout,
        busy_poll: args.busy_poll,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
        report_half: args.report_half,
        interval_length_ns: args.output.interval_length,
    };
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        eprintln!(
            "cauda net: {:?} to {}, {} B / {} B, {} connection(s), {} for {} — Ctrl-C stops and saves",
            config.proto,
            config
                .target
                .map_or("an in-process loopback responder".into(), |a| a.to_string()),
            config.size,
            config.response_size,
            config.conns,
            match config.rate_per_s {
                Some(r) => format!("{r}/s open loop"),
                None => "closed-loop ping-pong".into(),
            },
            units::format_duration_compact(config.runtime_ns),
        );
    }
    let finished = probe::net::run(&config, &destination, &stop)?;
    let faults = &finished.run.faults;
    let get = |k: &str| faults.get(k).copied().unwrap_or(0);
    if !args.output.quiet {
        eprintln!(
            "messages: {} sent, {} answered, {} lost, {} in flight at stop; replies: {} duplicate, {} late, {} wrong sequence, {} malformed",
            get("sent"),
            get("answered"),
            get("lost"),
            get("in_flight"),
            get("duplicate"),
            get("late"),
            get("wrong_seq"),
            get("malformed")
        );
    }
    finish_run(finished, args.output.quiet)
}

fn serve(args: cli::ServeArgs) -> Result<Outcome> {
    let config = probe::net::serve::ServeConfig {
        listen: args.listen,
        udp: args.udp,
        engine: args.engine,
        max_conns: args.max_conns,
        max_message: args.max_message,
        idle_timeout_ns: args.idle_timeout,
        frame_timeout_ns: args.frame_timeout,
        drop_every: args.drop_every,
        dup_every: args.dup_every,
        wrong_seq_every: args.wrong_seq_every,
        allow_large_replies: args.allow_large_replies,
    };
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    probe::net::serve(config, args.metrics_listen, &stop, args.quiet)?;
    Ok(Outcome::Done)
}

fn disk(args: cli::DiskArgs) -> Result<Outcome> {
    let config = args.config()?;
    config.validate()?;
    let stop = StopFlag::on_signals()?;
    let destination = destination(&args.output)?;
    if !args.output.quiet {
        eprintln!(
            "cauda disk: {} job(s), --rw {} {} for {} — Ctrl-C stops and saves",
            config.jobs,
            serde_json::to_value(config.rw)?.as_str().unwrap_or("?"),
            match config.rate_per_s {
                Some(rate) => format!("at {rate}/s (open loop)"),
                None => format!("at iodepth {} (closed loop)", config.iodepth),
            },
            units::format_duration_compact(config.runtime_ns),
        );
    }
    let finished = probe::disk::run(&config, &destination, &stop)?;
    if let (false, Some(section)) = (args.output.quiet, &finished.run.disk) {
        let closed = finished.run.load == model::LoadMode::ClosedLoop;
        print!("{}", probe::disk::report::render(section, closed));
    }
    finish_run(finished, args.output.quiet)
}

/// Prints a finished run's warnings, its table and where it was saved.
fn finish_run(finished: probe::session::Finished, quiet: bool) -> Result<Outcome> {
    let probe::session::Finished { mut run, path } = finished;
    print_warnings(&run.warnings);
    let interrupted = run.interrupted;
    let source = path.display().to_string();
    if !quiet {
        let loaded = Loaded {
            source: source.clone(),
            format: Format::CaudaRun,
            series: std::mem::take(&mut run.series),
            run: Some(run),
            warnings: Vec::new(),
        };
        let analysis = analyze::analyze(&[loaded], &analyze::Options::default())?;
        let mut out = std::io::stdout().lock();
        write!(out, "{}", report::table::render(&analysis))?;
    }
    if interrupted {
        eprintln!(
            "interrupted: every completed interval and the partial one are saved in {source}"
        );
        Ok(Outcome::Interrupted)
    } else {
        eprintln!("saved {source}");
        Ok(Outcome::Done)
    }
}

fn analyze(args: AnalyzeArgs) -> Result<Outcome> {
    let analysis_options = analyze::Options {
        percentiles: args.percentiles.0,
        confidence: args.confidence,
        fanout: args.fanout,
        expected_interval_ns: args.expected_interval,
        timeline: args.timeline,
    };
    analyze::validate(&analysis_options)?;
    let inputs = load_all(&args.files, &args.input)?;
    let analysis = analyze::analyze(&inputs, &analysis_options)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &analysis)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report::table::render(&analysis))?;
    }
    out.flush()?;
    Ok(Outcome::Done)
}

fn compare(args: CompareArgs) -> Result<Outcome> {
    let options = args.input.read_options();
    let base = load(&args.base, &options)?;
    let new = load(&args.new, &options)?;
    let budgets = args.fail_if_worse.map(|b| b.0).unwrap_or_default();
    let compare_options = analyze::compare::CompareOptions {
        confidence: args.confidence,
        resamples: args.resamples as usize,
        seed: args.seed,
        extra: budgets.iter().map(|b| b.metric.clone()).collect(),
    };
    let comparison = analyze::compare::compare(&base, &new, &compare_options)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &comparison)?;
        writeln!(out)?;
    } else if args.markdown {
        write!(out, "{}", report::compare::render_markdown(&comparison))?;
    } else {
        write!(out, "{}", report::compare::render_text(&comparison))?;
    }
    out.flush()?;
    if let Some(budget) = budgets
        .iter()
        .find(|b| !comparison.rows.iter().any(|r| r.metric == b.metric.name()))
    {
        return Err(error::input_error(format!(
            "--fail-if-worse {}: these inputs have no such metric (throughput needs timed intervals \
             on both sides), so the gate could never fail",
            budget.metric.name()
        )));
    }
    let broken = analyze::compare::over_budget(&comparison, &budgets);
    if broken.is_empty() {
        return Ok(Outcome::Done);
    }
    let list: Vec<String> = broken
        .iter()
        .map(|(row, budget)| {
            format!(
                "{} {} {:+.1} % (budget {budget} %)",
                row.series,
                row.metric,
                row.change_pct.unwrap_or(0.0)
            )
        })
        .collect();
    Err(anyhow::anyhow!("worse than allowed: {}", list.join("; ")))
}

/// Loads an input and prints what its importer passed over.
fn load(path: &std::path::Path, options: &formats::import::options::ReadOptions) -> Result<Loaded> {
    let loaded = formats::import::load(path, options)?;
    print_warnings(&loaded.warnings);
    Ok(loaded)
}

fn load_all(files: &[std::path::PathBuf], input: &cli::InputArgs) -> Result<Vec<Loaded>> {
    let options = input.read_options();
    // Files are independent: the CPUs share them.
    sys::map_parallel(files, |path| load(path, &options))
        .into_iter()
        .collect()
}

fn print_warnings(warnings: &[model::Warning]) {
    for warning in warnings {
        eprintln!("warning: {} — {}", warning.message, warning.advice);
    }
}

fn convert(args: ConvertArgs) -> Result<Outcome> {
    use formats::export::{self, ExportFormat};
    type Exporter = fn(&[Loaded], &ConvertArgs) -> Result<Vec<u8>>;
    let (kind, export): (output::OwnKind, Exporter) = match args.to {
        ExportFormat::Json => (output::OwnKind::RunFile, |i, _| export::json::to_json(i)),
        ExportFormat::Hlog => (output::OwnKind::Hlog, |i, _| Ok(export::hlog::to_hlog(i))),
        ExportFormat::Csv => (output::OwnKind::Other, |i, _| export::csv::to_csv(i)),
        ExportFormat::Hgrm => (output::OwnKind::Other, |i, a| {
            export::hgrm::to_hgrm(i, a.hgrm_unit)
        }),
        ExportFormat::Omb => (output::OwnKind::Other, |i, _| export::omb::to_omb(i)),
        ExportFormat::Parquet => return convert_parquet(args),
    };
    let checked = output::check_writable(&args.output, kind, args.force, "-o")?;
    let inputs = load_all(&args.files, &args.input)?;
    if args.to != ExportFormat::Json {
        export::inputs::require_distributions(&inputs)?;
    }
    let bytes = export(&inputs, &args)?;
    output::write_checked(&args.output, checked, &bytes)?;
    eprintln!("wrote {}", args.output.display());
    Ok(Outcome::Done)
}

/// `convert --to parquet`: a directory of two tables.
fn convert_parquet(args: ConvertArgs) -> Result<Outcome> {
    use formats::export::parquet;
    let checked = output::check_dir(
        &args.output,
        &parquet::FILES,
        output::OwnKind::Parquet,
        args.force,
        "-o",
    )?;
    let inputs = load_all(&args.files, &args.input)?;
    print_warnings(&formats::export::inputs::left_out(&inputs)?);
    let tables = parquet::to_parquet(&inputs)?;
    output::write_dir(&checked, &[&tables.intervals, &tables.buckets])?;
    eprintln!(
        "wrote {}: {} ({} rows) and {} ({} rows)",
        args.output.display(),
        parquet::FILES[0],
        tables.interval_rows,
        parquet::FILES[1],
        tables.bucket_rows
    );
    Ok(Outcome::Done)
}

fn merge(args: MergeArgs) -> Result<Outcome> {
    let checked = output::check_writable(&args.output, output::OwnKind::RunFile, args.force, "-o")?;
    let inputs = load_all(&args.files, &args.input)?;
    let replaced = match checked {
        output::Checked::Replaces { dev, ino } => Some((dev, ino)),
        _ => None,
    };
    formats::merge::refuse_double_counting(&args.files, replaced, &inputs)?;
    formats::export::inputs::require_distributions(&inputs)?;
    let run = formats::merge::merge(&inputs, args.tag_by)?;
    let bytes = formats::export::runfile::to_bytes(&run)?;
    output::write_checked(&args.output, checked, &bytes)?;
    for warning in &run.warnings {
        eprintln!("warning: {} — {}", warning.message, warning.advice);
    }
    eprintln!(
        "merged {} input(s) into {} series: {}",
        inputs.len(),
        run.series.len(),
        args.output.display()
    );
    // Freeing some 100,000 histograms takes a tenth of the merge; the
    // process ends next, so it is not waited for.
    std::thread::spawn(move || drop((inputs, run)));
    Ok(Outcome::Done)
}

fn report_html(args: cli::ReportArgs) -> Result<Outcome> {
    let checked =
        output::check_writable(&args.output, output::OwnKind::HtmlReport, args.force, "-o")?;
    if let Some(dir) = &args.svg {
        report::html::check_svg_dir(dir)?;
    }
    let options = report::html::Options {
        title: args.title.unwrap_or_else(|| "cauda report".into()),
        confidence: args.confidence,
    };
    analyze::validate(&analyze::Options {
        confidence: options.confidence,
        ..analyze::Options::default()
    })?;
    let inputs = load_all(&args.files, &args.input)?;
    let baseline = args
        .baseline
        .as_ref()
        .map(|path| load(path, &args.input.read_options()))
        .transpose()?;
    let built = report::html::build(&inputs, baseline.as_ref(), &options, args.svg.is_some())?;
    if let Some(dir) = &args.svg {
        report::html::check_svgs(dir, &built.charts, args.force)?;
    }
    output::write_checked(&args.output, checked, built.html.as_bytes())?;
    eprintln!("wrote {}", args.output.display());
    if let Some(dir) = &args.svg {
        let written = report::html::write_svgs(dir, &built.charts, args.force)?;
        eprintln!("wrote {} chart(s) into {}", written.len(), dir.display());
    }
    Ok(Outcome::Done)
}
