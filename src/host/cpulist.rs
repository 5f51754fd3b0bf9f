//! Linux CPU lists: `0-3,8,10-11`, as in `/sys/devices/system/cpu/online`,
//! `isolcpus=` and `taskset -c`.

/// Parses a CPU list into sorted, unique CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    const SYNTAX: &str = "expected a CPU list such as 0, 0-3 or 0,2,4-5";
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let part = part.trim();
        let parse = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{text}': '{s}' is not a CPU number; {SYNTAX}"))
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (parse(lo)?, parse(hi)?);
                if lo > hi {
                    return Err(format!("'{text}': range {lo}-{hi} is backwards; {SYNTAX}"));
                }
                if hi >= 8192 {
                    return Err(format!("'{text}': CPU {hi} is beyond any machine"));
                }
                cpus.extend(lo..=hi);
            }
            None => {
                let cpu = parse(part)?;
                if cpu >= 8192 {
                    return Err(format!("'{text}': CPU {cpu} is beyond any machine"));
                }
                cpus.push(cpu);
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Ok(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1,1,0"), Ok(vec![0, 1]));
        for bad in ["", "a", "3-1", "1-", "-1", "99999"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad}");
        }
    }
}
