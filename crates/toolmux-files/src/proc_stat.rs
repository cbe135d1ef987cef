//! A process's `/proc/PID/stat` line (Linux). Its second field is the command name in
//! parentheses, which may itself hold spaces and parentheses, so the fields are counted from
//! after its last `)`: splitting the whole line at spaces reads the wrong field for a process
//! named `a) b`.

use std::str::FromStr;

/// The fields of one `/proc/PID/stat` line after the command name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// Fields 3 (the state) onwards.
    rest: Vec<String>,
}

impl ProcStat {
    /// The line of process `pid`; `None` when there is no such process (or no `/proc`).
    pub fn of(pid: u32) -> Option<Self> {
        Self::read(&format!("/proc/{pid}/stat"))
    }

    /// The line of this process.
    pub fn of_self() -> Option<Self> {
        Self::read("/proc/self/stat")
    }

    fn read(path: &str) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Splits a line as the kernel writes it; `None` when it has no command name.
    pub fn parse(line: &str) -> Option<Self> {
        let (_, rest) = line.rsplit_once(')')?;
        Some(Self {
            rest: rest.split_whitespace().map(str::to_string).collect(),
        })
    }

    /// Field `n` as proc(5) numbers them (3: state, 4: parent, 5: process group, 6: session,
    /// 22: start time, 50 and 51: the environment block); `None` for the pid and command (1
    /// and 2) and past the end.
    pub fn field(&self, n: usize) -> Option<&str> {
        self.rest.get(n.checked_sub(3)?).map(String::as_str)
    }

    /// Field `n` parsed as a number (or anything else [`FromStr`]).
    pub fn number<T: FromStr>(&self, n: usize) -> Option<T> {
        self.field(n)?.parse().ok()
    }

    /// Whether the process is dead but not yet reaped (state `Z`, or `X` on its way out).
    pub fn is_zombie(&self) -> bool {
        matches!(self.field(3), Some("Z" | "X"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_the_last_parenthesis_of_the_command() {
        let stat = ProcStat::parse("42 (a) b (c)) S 1 42 40 0 -1").expect("parsed");
        assert_eq!(stat.field(3), Some("S"));
        assert_eq!(stat.number::<u32>(4), Some(1));
        assert_eq!(stat.number::<u32>(5), Some(42));
        assert_eq!(stat.number::<u32>(6), Some(40));
        assert_eq!(stat.field(2), None);
        assert_eq!(stat.field(99), None);
        assert!(!stat.is_zombie());
        assert!(ProcStat::parse("Z 1 2").is_none());
        assert!(ProcStat::parse("7 (x) Z 1").expect("parsed").is_zombie());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_found_with_its_own_group() {
        let stat = ProcStat::of(std::process::id()).expect("this process");
        let group = stat.number::<u32>(5).expect("a group");
        assert!(group > 0);
        assert_eq!(ProcStat::of_self().expect("self").number(5), Some(group));
    }
}
