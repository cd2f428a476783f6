//! `rshmem-run -n N [--] program args...`: starts N PEs of a program on this node and waits
//! for them, the role of `nvshmrun`. See `rshmem_host::launch` for what the PEs get and for
//! the multi-node path (`srun`/`mpirun`).
//!
//! Exit status: 0 if every PE succeeded; else the status of the PE the message names (the
//! first that failed of its own accord; 128 + the signal if one killed it; 124 for a PE that
//! hung), with the message on stderr; 2 for a usage error; 126/127 if the program cannot be
//! executed / found; 1 for other launcher errors.

use rshmem_host::launch::{self, PeGroup};
use rshmem_host::Error;
use std::ffi::OsString;
use std::process::ExitCode;

const USAGE: &str = "\
Usage: rshmem-run -n N [--] PROGRAM [ARGS...]

Starts N processing elements (PEs) of PROGRAM on this node, one per GPU, and waits for
them. Every line a PE prints is prefixed with `[PE k] `. If a PE fails, the others are
ended and rshmem-run exits with that PE's status (128 + the signal if one killed it).
A GPU PE whose work makes no progress for RSHMEM_HANG_TIMEOUT seconds (default 300,
0: never) ends the job as hung, with what every PE had pending (status 124).

Options:
  -n, --npes N   the number of PEs (default: $RSHMEM_NPES)
  -h, --help     print this help

Across nodes, start PROGRAM with srun or mpirun instead: rshmem detects them.";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Cli {
    Help,
    Run {
        npes: usize,
        program: OsString,
        args: Vec<OsString>,
    },
}

/// Parses the arguments after the program name. Options end at `--` or the first
/// argument that is not one; everything after the program goes to it untouched.
/// `default_npes` (reading `RSHMEM_NPES`) is asked only when `-n` is absent.
fn parse(
    args: impl IntoIterator<Item = OsString>,
    default_npes: impl FnOnce() -> Result<Option<usize>, String>,
) -> Result<Cli, String> {
    let mut args = args.into_iter();
    let mut npes = None;
    let program = loop {
        let Some(arg) = args.next() else {
            return Err("no PROGRAM to start".into());
        };
        let Some(text) = arg.to_str() else {
            break arg;
        };
        let value = match text {
            "-h" | "--help" => return Ok(Cli::Help),
            "--" => break args.next().ok_or("no PROGRAM after `--`")?,
            "-n" | "--npes" => args
                .next()
                .ok_or(format!("{text} needs a value: the number of PEs"))?,
            _ if text.starts_with("--npes=") => text["--npes=".len()..].into(),
            _ if text.starts_with("-n") && text.len() > 2 => text[2..].into(),
            _ if text.starts_with('-') => return Err(format!("unknown option {text}")),
            _ => break arg,
        };
        npes = Some(parse_npes(&value)?);
    };
    let npes = match npes {
        Some(n) => n,
        None => {
            default_npes()?.ok_or("the number of PEs is missing: pass -n N or set RSHMEM_NPES")?
        }
    };
    Ok(Cli::Run {
        npes,
        program,
        args: args.collect(),
    })
}

fn parse_npes(value: &OsString) -> Result<usize, String> {
    value
        .to_str()
        .and_then(launch::parse_npes)
        .ok_or_else(|| format!("-n expects a whole number of PEs, at least 1; got {value:?}"))
}

fn main() -> ExitCode {
    let cli = parse(std::env::args_os().skip(1), || {
        launch::requested_npes().map_err(|e| e.to_string())
    });
    let (npes, program, args) = match cli {
        Ok(Cli::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Cli::Run {
            npes,
            program,
            args,
        }) => (npes, program, args),
        Err(message) => {
            eprintln!("rshmem-run: {message}\nTry `rshmem-run --help`.");
            return ExitCode::from(2);
        }
    };
    match PeGroup::new(npes, program).args(args).status() {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(failure)) => {
            let ended = if npes > 1 { " (the job was ended)" } else { "" };
            eprintln!("rshmem-run: {failure}{ended}");
            // A status whose low byte is 0 must still read as a failure.
            ExitCode::from(
                u8::try_from(failure.exit.shell_status() & 0xff)
                    .unwrap_or(1)
                    .max(1),
            )
        }
        Err(err) => {
            eprintln!("rshmem-run: {err}");
            ExitCode::from(match &err {
                Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 127,
                Error::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::PermissionDenied =>
                {
                    126
                }
                _ => 1,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str], env_npes: Option<usize>) -> Result<Cli, String> {
        parse(args.iter().map(OsString::from), || Ok(env_npes))
    }

    fn run(npes: usize, program: &str, args: &[&str]) -> Cli {
        Cli::Run {
            npes,
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn every_form_of_the_pe_count() {
        for form in [&["-n", "4"][..], &["-n4"], &["--npes", "4"], &["--npes=4"]] {
            let args: Vec<&str> = form.iter().copied().chain(["prog", "x"]).collect();
            assert_eq!(
                cli(&args, None).unwrap(),
                run(4, "prog", &["x"]),
                "{form:?}"
            );
        }
        assert_eq!(cli(&["prog"], Some(3)).unwrap(), run(3, "prog", &[]));
        assert_eq!(
            cli(&["-n", "2", "prog"], Some(3)).unwrap(),
            run(2, "prog", &[])
        );
    }

    #[test]
    fn program_arguments_pass_untouched() {
        assert_eq!(
            cli(&["-n", "2", "prog", "-n", "7", "--help"], None).unwrap(),
            run(2, "prog", &["-n", "7", "--help"])
        );
        assert_eq!(
            cli(&["-n", "2", "--", "-dash-prog", "a"], None).unwrap(),
            run(2, "-dash-prog", &["a"])
        );
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        assert_eq!(cli(&["--help", "prog"], None).unwrap(), Cli::Help);
        let err = |args: &[&str]| cli(args, None).unwrap_err();
        assert!(err(&[]).contains("no PROGRAM"));
        assert!(err(&["-n", "2"]).contains("no PROGRAM"));
        assert!(err(&["-n", "2", "--"]).contains("after `--`"));
        assert!(err(&["-n"]).contains("needs a value"));
        assert!(err(&["-n", "0", "prog"]).contains("at least 1; got \"0\""));
        assert!(err(&["-nx", "prog"]).contains("got \"x\""));
        assert!(err(&["-x", "prog"]).contains("unknown option -x"));
        assert!(err(&["prog"]).contains("pass -n N or set RSHMEM_NPES"));
        let bad_env = parse(["prog".into()], || Err("RSHMEM_NPES is \"z\"".into()));
        assert!(bad_env.unwrap_err().contains("RSHMEM_NPES is \"z\""));
    }
}
