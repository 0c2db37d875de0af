//! How many threads the model runs on by default: one per physical core the process may
//! use. Two hardware threads of one core share its vector units, and llama.cpp's matrix
//! work is bound by them and by memory: a second thread per core mostly waits at the
//! barriers (llama.cpp's own tools default to the physical cores for that reason).

use std::collections::HashSet;
use std::path::Path;

/// Threads for llama.cpp when none are configured: the physical cores among the CPUs this
/// process may run on (its affinity, as `available_parallelism` reports it), at least 1.
/// Where the topology cannot be read, every CPU the process may use.
pub(crate) fn default_threads() -> usize {
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = allowed_cpus().unwrap_or_default();
    match physical_cores(Path::new("/sys/devices/system/cpu"), &cpus) {
        Some(cores) if cores > 0 => cores.min(allowed),
        _ => allowed,
    }
}

/// The CPUs this process may run on (from `/proc/self/status`), when it says.
fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpu_list(list.trim())
}

/// A kernel CPU list (`0-3,6,8-9`) as the CPUs it names.
fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// How many distinct physical cores (package and core id) `cpus` are on, read from the
/// topology under `root`; `None` when a CPU's topology cannot be read.
fn physical_cores(root: &Path, cpus: &[usize]) -> Option<usize> {
    let mut cores = HashSet::new();
    for cpu in cpus {
        let topology = root.join(format!("cpu{cpu}/topology"));
        let read = |name: &str| -> Option<String> {
            Some(
                std::fs::read_to_string(topology.join(name))
                    .ok()?
                    .trim()
                    .to_string(),
            )
        };
        cores.insert((read("physical_package_id")?, read("core_id")?));
    }
    Some(cores.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_read_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Some(vec![0, 1, 2, 3, 6, 8, 9]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn hardware_threads_of_one_core_count_once() {
        let dir = tempfile::tempdir().unwrap();
        // Two packages; cpu0 and cpu2 are one core's two threads.
        for (cpu, package, core) in [(0, 0, 0), (1, 0, 1), (2, 0, 0), (3, 1, 0)] {
            let topology = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topology).unwrap();
            std::fs::write(topology.join("physical_package_id"), format!("{package}\n")).unwrap();
            std::fs::write(topology.join("core_id"), format!("{core}\n")).unwrap();
        }
        assert_eq!(physical_cores(dir.path(), &[0, 1, 2, 3]), Some(3));
        assert_eq!(physical_cores(dir.path(), &[0, 2]), Some(1));
        assert_eq!(physical_cores(dir.path(), &[0, 7]), None);
        assert!(default_threads() >= 1);
    }
}
