//! The width human output is fitted to: `$COLUMNS` when it is set (the
//! user's override), else the terminal's width from TIOCGWINSZ on stdout or,
//! when stdout is redirected (`| less`), on stderr; else 100 columns
//! ([`Layout::NOT_A_TERMINAL`]: a file or a pipe with no terminal behind).

use std::os::fd::{AsRawFd, RawFd};

use stackbench_results::run_table::Layout;

/// The layout of human output, `wide` from `--wide`.
pub fn layout(wide: bool) -> Layout {
    Layout {
        width: width_from(std::env::var("COLUMNS").ok().as_deref(), || {
            [std::io::stdout().as_raw_fd(), std::io::stderr().as_raw_fd()]
                .into_iter()
                .find_map(columns_of)
        }),
        wide,
    }
}

/// `$COLUMNS` when it is a positive number, else the terminal's width.
fn width_from(columns: Option<&str>, terminal: impl FnOnce() -> Option<usize>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
        .or_else(terminal)
        .unwrap_or(Layout::NOT_A_TERMINAL.width)
}

/// Columns of the terminal on `fd`; `None` when it is not a terminal.
fn columns_of(fd: RawFd) -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ only writes a winsize into the struct given.
    let r = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_then_the_terminal_then_100() {
        assert_eq!(width_from(Some("132"), || Some(80)), 132);
        assert_eq!(width_from(Some(" 90\n"), || None), 90);
        assert_eq!(width_from(Some("wide"), || Some(80)), 80);
        assert_eq!(width_from(Some("0"), || None), 100);
        assert_eq!(width_from(None, || None), 100);
    }

    #[test]
    fn a_pipe_has_no_width() {
        let (r, w) = std::io::pipe().unwrap();
        assert_eq!(columns_of(r.as_raw_fd()), None);
        assert_eq!(columns_of(w.as_raw_fd()), None);
    }
}
