//! Which backend runs the PEs: `RSHMEM_BACKEND` = `gpu`, `sim` or `auto` (default: GPUs if
//! one is usable, else the simulator, said once on stderr).

use crate::contract::{Error, Result};
use std::sync::OnceLock;

/// Where the PEs run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// One process per GPU, CUDA and NVSHMEM.
    Gpu,
    /// The CPU simulator: PEs are threads of this process.
    Sim,
}

/// What `RSHMEM_BACKEND` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    Auto,
    Gpu,
    Sim,
}

pub(crate) fn parse_request(value: Option<&str>) -> Result<Request> {
    match value.map(str::trim) {
        None | Some("") | Some("auto") => Ok(Request::Auto),
        Some("gpu") => Ok(Request::Gpu),
        Some("sim") => Ok(Request::Sim),
        Some(other) => Err(Error::BadBackend(other.to_string())),
    }
}

/// Resolves a request against whether a GPU is usable (`probe` gives the reason if not).
pub(crate) fn resolve(
    request: Request,
    probe: impl FnOnce() -> Result<(), String>,
) -> Result<(Backend, Option<String>)> {
    match request {
        Request::Sim => Ok((Backend::Sim, None)),
        Request::Gpu => probe().map(|()| (Backend::Gpu, None)).map_err(Error::NoGpu),
        Request::Auto => Ok(match probe() {
            Ok(()) => (Backend::Gpu, None),
            Err(why) => (Backend::Sim, Some(why)),
        }),
    }
}

/// What [`Backend::current`] keeps of a failure to resolve: for [`Error::NoGpu`] its reason
/// alone, which each call wraps in `NoGpu` again (keeping the whole message doubled its
/// prefix and advice).
fn reason(e: Error) -> String {
    match e {
        Error::NoGpu(why) => why,
        other => other.to_string(),
    }
}

impl Backend {
    /// The backend this process uses, chosen once from `RSHMEM_BACKEND` and the machine.
    pub fn current() -> Result<Backend> {
        static CHOICE: OnceLock<std::result::Result<Backend, String>> = OnceLock::new();
        CHOICE
            .get_or_init(|| {
                let request = parse_request(std::env::var("RSHMEM_BACKEND").ok().as_deref())
                    .map_err(|e| e.to_string())?;
                let (backend, fallback) = resolve(request, crate::gpu::probe).map_err(reason)?;
                if let Some(why) = fallback {
                    eprintln!("rshmem: no usable GPU ({why}); running on the CPU simulator");
                }
                Ok(backend)
            })
            .clone()
            .map_err(
                |msg| match parse_request(std::env::var("RSHMEM_BACKEND").ok().as_deref()) {
                    Err(e) => e,
                    Ok(_) => Error::NoGpu(msg),
                },
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests() {
        assert_eq!(parse_request(None).unwrap(), Request::Auto);
        assert_eq!(parse_request(Some("gpu")).unwrap(), Request::Gpu);
        assert_eq!(parse_request(Some(" sim ")).unwrap(), Request::Sim);
        let err = parse_request(Some("cuda")).unwrap_err().to_string();
        assert!(
            err.contains("\"cuda\"") && err.contains("`gpu`, `sim` or `auto`"),
            "{err}"
        );
    }

    #[test]
    fn auto_falls_back_with_the_reason() {
        let (b, why) = resolve(Request::Auto, || Err("no libcuda".into())).unwrap();
        assert_eq!(b, Backend::Sim);
        assert_eq!(why.as_deref(), Some("no libcuda"));
        assert_eq!(
            resolve(Request::Auto, || Ok(())).unwrap(),
            (Backend::Gpu, None)
        );
    }

    #[test]
    fn forced_gpu_without_gpu_is_an_error_naming_the_fix() {
        let err = resolve(Request::Gpu, || Err("libcuda.so.1 not found".into())).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("libcuda.so.1 not found") && msg.contains("RSHMEM_BACKEND"),
            "{msg}"
        );
        assert_eq!(
            resolve(Request::Sim, || panic!("not probed")).unwrap(),
            (Backend::Sim, None)
        );
    }

    #[test]
    fn a_cached_no_gpu_error_says_its_text_once() {
        let e = resolve(Request::Gpu, || Err("no driver".into())).unwrap_err();
        let again = Error::NoGpu(reason(e)).to_string();
        assert_eq!(again.matches("no GPU is usable").count(), 1, "{again}");
        assert_eq!(again.matches("Unset RSHMEM_BACKEND").count(), 1, "{again}");
        assert!(again.contains("no driver"), "{again}");
    }

    #[test]
    fn forced_gpu_backend_without_gpu_names_the_cause_and_the_fix() {
        match resolve(Request::Gpu, crate::gpu::probe) {
            Err(e @ Error::NoGpu(_)) => {
                let msg = e.to_string();
                assert!(msg.contains("RSHMEM_BACKEND"), "{msg}");
                assert!(
                    msg.contains("libcuda") || msg.contains("CUDA") || msg.contains("NVSHMEM"),
                    "{msg}"
                );
            }
            Err(other) => panic!("expected NoGpu, got {other}"),
            // A machine with a driver, a GPU and NVSHMEM: then it must say GPU.
            Ok((backend, _)) => assert_eq!(backend, Backend::Gpu),
        }
    }
}
