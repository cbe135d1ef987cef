//! Byte counts as people read them, in every message that names a size or a limit.

/// Bytes for people: `812 bytes`, `14.2 KiB`, `256 KiB`, `1 MiB`, `1.5 GiB`.
pub fn human_bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * 1024 * 1024;
    let (unit, name) = match n {
        _ if n >= GIB => (GIB, "GiB"),
        _ if n >= MIB => (MIB, "MiB"),
        _ if n >= KIB => (KIB, "KiB"),
        _ => return format!("{n} bytes"),
    };
    if n.is_multiple_of(unit) {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.1} {name}", n as f64 / unit as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(5), "5 bytes");
        assert_eq!(human_bytes(812), "812 bytes");
        assert_eq!(human_bytes(14_540), "14.2 KiB");
        assert_eq!(human_bytes(256 * 1024), "256 KiB");
        assert_eq!(human_bytes(1024 * 1024), "1 MiB");
        assert_eq!(human_bytes(16 * 1024 * 1024), "16 MiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }
}
