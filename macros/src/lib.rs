//! `#[kernel]`: marks a function as a kernel entry point.
//!
//! ```ignore
//! #[kernel]
//! pub unsafe fn ring(dst: *mut i32) { /* ... */ }
//! ```
//!
//! The signature is checked: no return value, no generics, no `self`, no `async`, plain
//! identifiers as parameters, every parameter a `KernelArg` (`Copy`, same bytes on host and
//! device). It expands to:
//!
//! * on `nvptx64`: `#[no_mangle] pub unsafe extern "ptx-kernel" fn ring(...)`, the PTX entry;
//! * on the host: the function as a plain `pub unsafe fn` (the CPU simulator runs it once per
//!   simulated thread) and a type `ring` implementing `rshmem_device::Kernel`, which host code
//!   names to launch it with type-checked arguments: `module.launch::<ring>(cfg, (ptr,))`.
//!
//! The host function keeps the spans of the signature as written, so the project's lints
//! apply to it at its definition: a kernel whose documentation has no `# Safety` section is
//! reported by `clippy::missing_safety_doc`, like any other `unsafe fn`. The macro adds
//! `unsafe` when the signature lacks it (every entry point trusts its launcher's arguments).
//!
//! `#[kernel(launch_bounds(384))]` (or `launch_bounds(384, 1)`) is CUDA's
//! `__launch_bounds__(384, 1)`: the kernel is launched with at most 384 threads per block
//! (checked by the host at launch, on both backends) and, on the GPU, ptxas allocates
//! registers for that many threads (`.maxntid 384, 1, 1`, `.minnctapersm 1`, which the builder
//! writes into the kernel's PTX entry). ptxas honours `setmaxnreg` only in such kernels.
//!
//! The most parameters a kernel may take, `MAX_KERNEL_ARGS`, is defined here and nowhere
//! else: `rshmem_device::kernel::MAX_KERNEL_ARGS` is `max_kernel_args!()`, and the device
//! crate checks that its `KernelArgs` tuples reach it. Every rejected signature is a test
//! case in `shmem-device/tests/ui/` (run by `cargo test -p rshmem-device --test kernel_macro`).

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Error, FnArg, ItemFn, Pat, ReturnType, Token};

/// The most parameters a `#[kernel]` may take: `cuLaunchKernel`'s parameter array on the GPU
/// side and the `KernelArgs` tuples on the host side are sized by it.
const MAX_KERNEL_ARGS: usize = 12;

/// `max_kernel_args!()`: `MAX_KERNEL_ARGS` as a `usize` literal, for
/// `rshmem_device::kernel::MAX_KERNEL_ARGS` (a proc-macro crate can export macros only).
#[doc(hidden)]
#[proc_macro]
pub fn max_kernel_args(input: TokenStream) -> TokenStream {
    if !input.is_empty() {
        let input = proc_macro2::TokenStream::from(input);
        return Error::new(input.span(), "max_kernel_args!() takes no arguments")
            .to_compile_error()
            .into();
    }
    let n = proc_macro2::Literal::usize_suffixed(MAX_KERNEL_ARGS);
    quote!(#n).into()
}

/// Marks a kernel entry point. See the crate documentation.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let bounds = match parse_bounds(proc_macro2::TokenStream::from(attr)) {
        Ok(b) => b,
        Err(err) => return err.to_compile_error().into(),
    };
    let func = parse_macro_input!(item as ItemFn);
    match expand(func, bounds) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// `launch_bounds(max_threads[, min_blocks_per_sm])`, the only argument `#[kernel]` takes.
#[derive(Clone, Copy)]
struct Bounds {
    max_threads: u32,
    min_blocks: u32,
}

fn parse_bounds(attr: proc_macro2::TokenStream) -> syn::Result<Option<Bounds>> {
    if attr.is_empty() {
        return Ok(None);
    }
    let usage = "#[kernel] takes one optional argument: `launch_bounds(max_threads)` or \
                 `launch_bounds(max_threads, min_blocks_per_sm)`";
    let call: syn::ExprCall =
        syn::parse2(attr.clone()).map_err(|_| Error::new(attr.span(), usage))?;
    if !matches!(&*call.func, syn::Expr::Path(p) if p.path.is_ident("launch_bounds"))
        || call.args.is_empty()
        || call.args.len() > 2
    {
        return Err(Error::new(attr.span(), usage));
    }
    let mut values = Vec::new();
    for arg in &call.args {
        match arg {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => values.push((i.base10_parse::<u32>()?, i.span())),
            other => {
                return Err(Error::new(
                    other.span(),
                    "launch_bounds takes integer literals",
                ))
            }
        }
    }
    let (max_threads, span) = values[0];
    if max_threads == 0 || max_threads > 1024 {
        return Err(Error::new(
            span,
            "launch_bounds: max_threads must be 1..=1024",
        ));
    }
    let min_blocks = values.get(1).map_or(0, |v| v.0);
    Ok(Some(Bounds {
        max_threads,
        min_blocks,
    }))
}

fn expand(func: ItemFn, bounds: Option<Bounds>) -> syn::Result<proc_macro2::TokenStream> {
    check_signature(&func)?;
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = func;
    // The host function is the signature as written (its spans, so lints point at the
    // definition), made `unsafe` if it was not.
    if sig.unsafety.is_none() {
        sig.unsafety = Some(Token![unsafe](sig.fn_token.span));
    }
    let name = &sig.ident;
    let name_str = name.to_string();
    // `rshmem_device::sim::SIM_SYMBOL_PREFIX` and the name: what a simulator library exports.
    let export_symbol = format!("rshmem_sim_kernel_{name_str}");
    let inputs = &sig.inputs;
    let (arg_names, arg_types): (Vec<_>, Vec<_>) = inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(pt) => (pt.pat.clone(), pt.ty.clone()),
            FnArg::Receiver(_) => unreachable!("rejected by check_signature"),
        })
        .unzip();
    let indices = (0..arg_names.len()).map(syn::Index::from);
    let signature = signature_text(&arg_names, &arg_types);
    // The builder reads `__rshmem_signature_<kernel>` (the parameter list, ASCII) from the
    // kernel crate's bitcode into the image, for launches checked at run time.
    let signature_marker = {
        let marker = syn::Ident::new(&format!("__rshmem_signature_{name_str}"), name.span());
        let bytes = proc_macro2::Literal::byte_string(signature.as_bytes());
        let len = signature.len();
        quote! {
            #[cfg(target_arch = "nvptx64")]
            #[doc(hidden)]
            #[no_mangle]
            pub static #marker: [u8; #len] = *#bytes;
        }
    };
    // Each parameter type must be a KernelArg; the assertion points at the offending type.
    let arg_checks = arg_types.iter().map(|ty| {
        quote_spanned! {ty.span()=>
            const _: fn() = || {
                fn assert_kernel_arg<T: ::rshmem_device::KernelArg>() {}
                assert_kernel_arg::<#ty>();
            };
        }
    });
    let doc_type = format!(
        "Host-side handle of the kernel [`fn@{name_str}`]: launch it with \
         `module.launch::<{name_str}>(config, args)`."
    );

    // The builder reads `__rshmem_launch_bounds_<kernel>` ("max min", ASCII) from the kernel
    // crate's bitcode and writes the PTX directives; the host reads MAX_THREADS.
    let (bounds_marker, max_threads) = match bounds {
        Some(Bounds {
            max_threads,
            min_blocks,
        }) => {
            let marker =
                syn::Ident::new(&format!("__rshmem_launch_bounds_{name_str}"), name.span());
            let text = format!("{max_threads} {min_blocks}");
            let bytes = proc_macro2::Literal::byte_string(text.as_bytes());
            let len = text.len();
            (
                quote! {
                    #[cfg(target_arch = "nvptx64")]
                    #[doc(hidden)]
                    #[no_mangle]
                    pub static #marker: [u8; #len] = *#bytes;
                },
                quote! { const MAX_THREADS: u32 = #max_threads; },
            )
        }
        None => (quote! {}, quote! {}),
    };

    Ok(quote! {
        #(#arg_checks)*

        #bounds_marker

        #signature_marker

        #[cfg(target_arch = "nvptx64")]
        #(#attrs)*
        #[no_mangle]
        #vis unsafe extern "ptx-kernel" fn #name(#inputs) #block

        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #vis #sig #block

        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = #doc_type]
        #[allow(non_camel_case_types)]
        #vis struct #name {}

        #[cfg(not(target_arch = "nvptx64"))]
        ::rshmem_device::__sim_export!(#name, #export_symbol);

        #[cfg(not(target_arch = "nvptx64"))]
        impl ::rshmem_device::Kernel for #name {
            const NAME: &'static str = #name_str;
            const SIGNATURE: &'static str = #signature;
            #max_threads
            type Args = (#(#arg_types,)*);
            #[inline]
            unsafe fn run_sim(args: Self::Args) {
                // SAFETY: forwarded from the caller of `run_sim`.
                unsafe { #name(#(args.#indices),*) }
            }
        }
    })
}

/// The parameter list as text, `"x: *mut f32, n: u32"`: each type's tokens with the spaces
/// `quote` puts between them removed where Rust needs none (`* mut f32` → `*mut f32`,
/// `a :: b < T >` → `a::b<T>`).
fn signature_text(names: &[Box<Pat>], types: &[Box<syn::Type>]) -> String {
    names
        .iter()
        .zip(types)
        .map(|(name, ty)| {
            let mut text = quote!(#ty).to_string();
            for (from, to) in [
                (" :: ", "::"),
                (":: ", "::"),
                (" < ", "<"),
                ("< ", "<"),
                (" <", "<"),
                (" >", ">"),
                (" ,", ","),
                ("* ", "*"),
                ("& ", "&"),
                (" ;", ";"),
                ("[ ", "["),
                (" ]", "]"),
            ] {
                text = text.replace(from, to);
            }
            format!("{}: {text}", quote!(#name))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_signature(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    let fail = |span: Span, msg: &str| Err(Error::new(span, msg));
    if let ReturnType::Type(_, ty) = &sig.output {
        return fail(
            ty.span(),
            "a #[kernel] cannot return a value: write results through a pointer argument",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        // Point at the parameters, or at the `where` clause when there are none.
        let span = match &sig.generics.where_clause {
            Some(clause) if sig.generics.params.is_empty() => clause.span(),
            _ => sig.generics.span(),
        };
        return fail(
            span,
            "a #[kernel] cannot be generic: PTX entry points need one concrete signature",
        );
    }
    if let Some(t) = &sig.asyncness {
        return fail(t.span(), "a #[kernel] cannot be async");
    }
    if let Some(t) = &sig.constness {
        return fail(t.span(), "a #[kernel] cannot be const");
    }
    if let Some(abi) = &sig.abi {
        return fail(abi.span(), "#[kernel] sets the ABI itself: remove `extern`");
    }
    if let Some(v) = &sig.variadic {
        return fail(v.span(), "a #[kernel] cannot be variadic");
    }
    if sig.inputs.len() > MAX_KERNEL_ARGS {
        return fail(
            sig.inputs.span(),
            &format!("a #[kernel] takes at most {MAX_KERNEL_ARGS} parameters"),
        );
    }
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => return fail(r.span(), "a #[kernel] cannot take `self`"),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {}
                other => {
                    return fail(
                        other.span(),
                        "#[kernel] parameters must be plain names (`x: u32`), not patterns",
                    )
                }
            },
        }
        if let FnArg::Typed(pt) = arg {
            if let syn::Type::Reference(r) = &*pt.ty {
                return fail(
                    r.span(),
                    "a #[kernel] cannot take references: pass raw pointers (`*mut T`) or values",
                );
            }
        }
    }
    Ok(())
}
