//! `cauda report`: the page's structure and known answers on fixtures made
//! by real tools and on real `cauda timer` runs, the bad-input rules, the
//! standalone SVGs, and a headless Chromium rendering of the page.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use common::{analyze_json, cauda, fixture, refused};
use serde_json::Value;

/// Runs `cauda report ARGS -o DIR/report.html` and returns the page.
fn report(dir: &Path, args: &[&std::ffi::OsStr]) -> String {
    let out = dir.join("report.html");
    common::succeeded(
        cauda()
            .arg("report")
            .args(args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap(),
    );
    std::fs::read_to_string(out).unwrap()
}

/// The markup of the element `<tag id="id" …>…</tag>` (first match; no
/// nesting of the same tag inside, which holds for our SVGs).
fn element<'a>(page: &'a str, tag: &str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<{tag} id=\"{id}\""))
        .unwrap_or_else(|| panic!("no <{tag} id={id}>"));
    let end = page[start..].find(&format!("</{tag}>")).unwrap() + start;
    &page[start..end]
}

/// Checks that SVG markup is well formed: every tag closed in order.
fn assert_well_formed(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unclosed '<'") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap().to_string();
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

/// No resource the browser would fetch over the network.
fn assert_offline(page: &str) {
    for needle in [
        "http://", "https://", "src=", "<link", "url(", "@import", "//cdn",
    ] {
        assert!(!page.contains(needle), "the page references {needle}");
    }
}

#[test]
fn an_hlog_with_three_tags_draws_three_series_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[fixture("hdr/java.hlog").as_os_str()]);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_offline(&page);
    for id in [
        "chart-spectrum",
        "chart-spectrum-linear",
        "chart-histogram",
        "chart-timeline-0",
        "chart-timeline-1",
        "chart-timeline-2",
    ] {
        let svg = element(&page, "svg", id);
        assert_well_formed(&format!("{svg}</svg>"));
    }
    assert!(!page.contains("chart-timeline-3"));
    for section in ["summary", "spectrum", "histogram", "timelines", "host"] {
        assert!(
            page.contains(&format!("<section id=\"{section}\"")),
            "{section}"
        );
    }

    let spectrum = element(&page, "svg", "chart-spectrum");
    assert_eq!(spectrum.matches("class=\"series\"").count(), 3);
    assert_eq!(spectrum.matches("<path class=\"line\"").count(), 3);
    assert_eq!(spectrum.matches("class=\"max\"").count(), 3);
    for tag in ["default", "read", "write"] {
        assert!(
            spectrum.contains(&format!(">{tag}</text>")),
            "legend lacks {tag}"
        );
    }
    // 5,000 samples: the x axis still runs to 99.999 %, ticks at each nine.
    for tick in ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"] {
        assert!(
            spectrum.contains(&format!(">{tick}</text>")),
            "no tick {tick}"
        );
    }
    // …and each sits where 1/(1−q) puts it: the axis spans 10^0..10^5 over
    // the plot's 806 px from x = 84, so 99 % (10^2) is at 2/5 of it.
    for (k, tick) in ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"]
        .iter()
        .enumerate()
    {
        let end = spectrum.find(&format!(">{tick}</text>")).unwrap();
        let start = spectrum[..end].rfind("<text x=\"").unwrap() + 9;
        let x: f64 = spectrum[start..start + spectrum[start..].find('"').unwrap()]
            .parse()
            .unwrap();
        let expected = 84.0 + 806.0 * k as f64 / 5.0;
        assert!(
            (x - expected).abs() < 0.11,
            "{tick} at x={x}, not {expected}"
        );
    }
    // Each series' max, as the analysis states it, is marked and labelled.
    let analysis = analyze_json(&fixture("hdr/java.hlog"), &[]);
    for s in analysis["inputs"][0]["series"].as_array().unwrap() {
        let max = cauda::units::format_ns(s["summary"]["max"].as_f64().unwrap());
        assert!(
            spectrum.contains(&format!("max {max}")),
            "max {max} not marked"
        );
    }

    let histogram = element(&page, "svg", "chart-histogram");
    assert_eq!(histogram.matches("class=\"bars\"").count(), 3);
    assert!(histogram.contains(">1</text>"), "the count axis reaches 1");

    // The timelines: four lines each, hover data for each interval.
    let timeline = element(&page, "svg", "chart-timeline-1");
    for line in ["max", "p99", "p50", "mean"] {
        assert!(
            timeline.contains(&format!("class=\"line {line}\"")),
            "{line}"
        );
    }
}

#[test]
fn hover_data_keeps_every_interval_max_of_a_real_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    // 3,000 intervals of 1 ms: more than the chart has pixel buckets.
    common::timer_run(
        &run,
        &[
            "--runtime",
            "3s",
            "--interval",
            "200us",
            "--interval-length",
            "1ms",
        ],
    );
    let page = report(dir.path(), &[run.as_os_str()]);
    let start = page.find("class=\"hover-data\">").unwrap() + "class=\"hover-data\">".len();
    let end = page[start..].find("</script>").unwrap() + start;
    let hover: Value = serde_json::from_str(&page[start..end]).unwrap();
    let hover: Vec<Vec<f64>> = serde_json::from_value(hover["b"].clone()).unwrap();
    assert!(
        hover.len() > 100 && hover.len() <= 450,
        "{} buckets",
        hover.len()
    );
    assert!(hover.iter().all(|b| b.len() == 10));
    let intervals: f64 = hover.iter().map(|b| b[2]).sum();
    let analysis = analyze_json(&run, &[]);
    let series = &analysis["inputs"][0]["series"][0];
    assert_eq!(intervals, series["intervals"].as_f64().unwrap());
    let completions: f64 = hover.iter().map(|b| b[3]).sum();
    assert_eq!(completions, series["summary"]["count"].as_f64().unwrap());
    let top = hover.iter().map(|b| b[8]).fold(0.0, f64::max);
    assert_eq!(top, series["summary"]["max"].as_f64().unwrap());
}

#[test]
fn printed_percentiles_show_in_table_and_spectrum_only() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[fixture("fio/randread.json").as_os_str()]);
    assert_offline(&page);
    assert!(page.contains("(printed percentiles)"));
    assert!(page.contains("not in the histogram or the timeline"));
    assert!(!page.contains("id=\"chart-histogram\""));
    assert!(!page.contains("id=\"chart-timeline-"));
    let spectrum = element(&page, "svg", "chart-spectrum");
    // fio prints 17 clat percentiles; each is a dot with its value.
    assert_eq!(spectrum.matches("(as printed)</title>").count(), 17 + 2);
    assert!(spectrum.contains("p99.99 = "));
    // slat and lat carry no percentiles: named as not drawn.
    assert!(page.contains("Not drawn"));
}

#[test]
fn a_baseline_adds_the_before_after_table() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(
        dir.path(),
        &[
            fixture("hdr/java.hlog").as_os_str(),
            "--baseline".as_ref(),
            fixture("hdr/python.hlog").as_os_str(),
            "--title".as_ref(),
            "Java <vs> Python".as_ref(),
        ],
    );
    assert!(page.contains("<title>Java &lt;vs&gt; Python</title>"));
    assert!(page.contains("<section id=\"comparison\""));
    let compare = &page[page.find("<section id=\"comparison\"").unwrap()..];
    assert!(compare.contains("<td>default</td><td>p99</td>"));
    assert!(compare.contains("class=\"verdict\""));
    assert!(compare.contains("Not compared (on one side only): read, write"));
    // The baseline is drawn too: 1 + 3 series.
    let spectrum = element(&page, "svg", "chart-spectrum");
    assert_eq!(spectrum.matches("class=\"series\"").count(), 4);
    assert!(spectrum.contains("baseline python.hlog · default"));
}

#[test]
fn svg_dir_gets_standalone_charts() {
    let dir = tempfile::tempdir().unwrap();
    let charts = dir.path().join("charts");
    report(
        dir.path(),
        &[
            fixture("hdr/java.hlog").as_os_str(),
            "--svg".as_ref(),
            charts.as_os_str(),
        ],
    );
    let mut names: Vec<String> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "histogram.svg",
            "spectrum-linear.svg",
            "spectrum.svg",
            "timeline-0-default.svg",
            "timeline-1-read.svg",
            "timeline-2-write.svg"
        ]
    );
    for name in &names {
        let svg = std::fs::read_to_string(charts.join(name)).unwrap();
        assert!(svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_well_formed(&svg);
    }
    // A foreign file in the way is refused, and left alone.
    std::fs::write(charts.join("spectrum.svg"), "mine").unwrap();
    let out = dir.path().join("again.html");
    cauda()
        .arg("report")
        .arg(fixture("hdr/java.hlog"))
        .arg("-o")
        .arg(&out)
        .arg("--svg")
        .arg(&charts)
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read_to_string(charts.join("spectrum.svg")).unwrap(),
        "mine"
    );
    // The collision is found before the page is written: nothing is.
    assert!(!out.exists(), "the page was written before the refusal");
}

#[test]
fn bad_inputs_and_outputs_exit_2_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixture("hdr/java.hlog");
    let out = dir.path().join("r.html");
    refused(&["report", "-o", out.to_str().unwrap()], "FILE");
    refused(
        &["report", "/no/such/input.json", "-o", out.to_str().unwrap()],
        "/no/such/input.json",
    );
    // The output is checked first: a missing input is not even looked at.
    refused(
        &["report", "/no/such/input.json", "-o", "/no/such/dir/r.html"],
        "-o /no/such/dir/r.html",
    );
    let foreign = dir.path().join("notes.html");
    std::fs::write(&foreign, "precious").unwrap();
    refused(
        &[
            "report",
            good.to_str().unwrap(),
            "-o",
            foreign.to_str().unwrap(),
        ],
        "--force",
    );
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "precious");
    cauda()
        .arg("report")
        .arg(&good)
        .arg("-o")
        .arg(&foreign)
        .arg("--force")
        .assert()
        .success();
    // A report cauda wrote is its own: written again without --force. A
    // foreign page that names cauda only past its head is not.
    let again = |to: &Path| {
        cauda()
            .arg("report")
            .arg(&good)
            .arg("-o")
            .arg(to)
            .output()
            .unwrap()
    };
    assert!(again(&foreign).status.success());
    let lookalike = dir.path().join("lookalike.html");
    let padding = "x".repeat(600);
    std::fs::write(
        &lookalike,
        format!("<!DOCTYPE html><p>{padding}</p><meta name=\"generator\" content=\"cauda 0.1.0\">"),
    )
    .unwrap();
    assert_eq!(again(&lookalike).status.code(), Some(2));
    refused(
        &[
            "report",
            good.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--confidence",
            "1.5",
        ],
        "--confidence 1.5",
    );
    assert!(!out.exists());
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|p| p.join(name))
                    .find(|p| p.is_file())
            })
        })
}

#[test]
fn headless_chromium_renders_every_chart() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CAUDA_REQUIRE_CHROMIUM").is_none(),
            "CAUDA_REQUIRE_CHROMIUM is set but no chromium is installed (apt-get install chromium)"
        );
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(
        dir.path(),
        &[
            fixture("hdr/java.hlog").as_os_str(),
            fixture("fio/randread.json").as_os_str(),
            fixture("cyclictest/run.json").as_os_str(),
        ],
    );
    let html = dir.path().join("report.html");
    let url = format!("file://{}", html.display());
    let browse = |extra: &[&str]| {
        let out = Process::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1400,3000",
            ])
            .args(extra)
            .arg(&url)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "chromium failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let shot = dir.path().join("report.png");
    browse(&[&format!("--screenshot={}", shot.display())]);
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1400);
    assert!(png.len() > 50_000, "a blank page? {} bytes", png.len());

    let dom = String::from_utf8(browse(&["--dump-dom"])).unwrap();
    assert!(
        dom.contains("class=\"js\""),
        "the page's script did not run to the end"
    );

    // Hover: a copy of the page with a script that moves the mouse over the
    // first timeline and stores what the tooltip says.
    let probe = page.replace(
        "</body>",
        "<script>var a=document.querySelector('figure.timeline rect.hover');\
         var r=a.getBoundingClientRect();\
         a.dispatchEvent(new MouseEvent('mousemove',{clientX:r.left+r.width/2,clientY:r.top+r.height/2,bubbles:true}));\
         document.body.setAttribute('data-tip',document.querySelector('figure.timeline .tip').textContent);</script></body>",
    );
    std::fs::write(&html, probe).unwrap();
    let hovered = String::from_utf8(browse(&["--dump-dom"])).unwrap();
    let tip_at = hovered.find("data-tip=\"").expect("the probe script ran") + 10;
    let tip = &hovered[tip_at..tip_at + hovered[tip_at..].find('"').unwrap()];
    for needle in [" s", "completions", "p50 ", "p99 ", "max ", "mean ", "µs"] {
        assert!(tip.contains(needle), "tooltip '{tip}' lacks '{needle}'");
    }
    std::fs::write(&html, &page).unwrap();
    let ids: Vec<&str> = page
        .match_indices("<svg id=\"")
        .map(|(i, _)| {
            let rest = &page[i + 9..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    // java.hlog: 3 timelines; fio printed percentiles and cyclictest histograms are untimed.
    assert_eq!(ids.len(), 6, "{ids:?}");
    for id in ids {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "{id} missing in the DOM"
        );
    }
}
