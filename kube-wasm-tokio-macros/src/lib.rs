//! `#[kube_wasm_tokio::main]` and `#[kube_wasm_tokio::test]`, used as `#[tokio::main]` and
//! `#[tokio::test]` in a controller compiled to wasm32-wasip1.
//!
//! **Replaces** `tokio-macros` (tokio's `#[tokio::main]` and `#[tokio::test]`), through
//! `kube-wasm-tokio`. The port guide is the kube-wasm book's *Porting a Rust controller*
//! (`docs/src/porting/rust.md` in the repository; `scripts/book.sh build` renders the book).
//!
//! ```ignore
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> { /* … */ Ok(()) }
//! ```
//! becomes a synchronous `fn main()` that hands the async body to the guest executor as the
//! module's root task and returns once the executor is stalled. The module then lives on,
//! entered by the host for each completion, until the root task finishes: its output decides
//! the exit status exactly as a native `main`'s would (`()`/`Ok` → 0; `Err(e)` → prints
//! `Error: {e:?}` and exits 1).
//!
//! `#[tokio::test] async fn name() { … }` becomes a `#[test] fn name()` that runs the body on
//! the guest executor until it finishes (see `kube_wasm_tokio::test`).
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Expr, ItemFn, Lit, Meta, Token, parse_macro_input, spanned::Spanned};

/// Marks the async `main` of a guest module. Accepts, and ignores, tokio's arguments
/// (`flavor`, `worker_threads`, `start_paused`, `crate`, …): the guest has one thread and one
/// executor whatever they say.
#[proc_macro_attribute]
pub fn main(_args: TokenStream, item: TokenStream) -> TokenStream {
    let input = parse_macro_input!(item as ItemFn);
    if input.sig.asyncness.is_none() {
        return syn::Error::new(
            input.sig.fn_token.span(),
            "the `async` keyword is missing from the function declaration",
        )
        .to_compile_error()
        .into();
    }
    if input.sig.ident != "main" || !input.sig.inputs.is_empty() {
        return syn::Error::new(
            input.sig.span(),
            "#[tokio::main] in a kube-wasm guest must be on `async fn main()` without arguments",
        )
        .to_compile_error()
        .into();
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = input;
    let output = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    quote! {
        #(#attrs)*
        #vis fn main() {
            let body = async move #block;
            ::tokio::__private::run_main::<_, #output>(body);
        }
    }
    .into()
}

/// Marks an async test, as `#[tokio::test]`: a `#[test]` function that runs the body on the
/// guest executor until it finishes and returns its output (`()` or a `Result`, as a
/// `#[test]` may). Like any `#[test]`, it is compiled only into test builds.
///
/// Takes tokio's arguments and rejects what tokio rejects: `flavor = "current_thread"` (the
/// default) or `"multi_thread"`, `worker_threads = N` (with `multi_thread` only),
/// `start_paused = true|false` (with `current_thread` only), `crate = "path"`.
///
/// What differs in a guest:
/// - every flavor runs on the guest's one thread and one executor, as with `#[tokio::main]`;
///   a test that needs tasks to run in parallel cannot pass;
/// - natively (the project's unit tests) each test gets a fresh fake host whose clock is
///   virtual and auto-advances to the next timer whenever every task waits, as tokio's
///   paused clock does — whatever `start_paused` says, so sleeps take no wall-clock time;
/// - a body left waiting for something nothing will deliver (an API request, a watch,
///   `ctrl_c`, a channel nobody sends on) fails the test with a message instead of hanging;
///   on wasm32 that includes any timer or host operation, since the host cannot enter a
///   module while a test runs;
/// - `unhandled_panic` (tokio_unstable) is not accepted.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(args with Punctuated::<Meta, Token![,]>::parse_terminated);
    let input = parse_macro_input!(item as ItemFn);
    match expand_test(args, input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand_test(
    args: Punctuated<Meta, Token![,]>,
    input: ItemFn,
) -> syn::Result<proc_macro2::TokenStream> {
    let options = TestOptions::parse(args)?;
    if input.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            input.sig.fn_token.span(),
            "the `async` keyword is missing from the function declaration",
        ));
    }
    if !input.sig.inputs.is_empty() {
        return Err(syn::Error::new(
            input.sig.inputs.span(),
            "the test function cannot accept arguments",
        ));
    }
    if let Some(attr) = input.attrs.iter().find(|a| a.path().is_ident("test")) {
        return Err(syn::Error::new(
            attr.span(),
            "second test attribute is supplied, consider removing or changing the order of your test attributes",
        ));
    }
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = input;
    sig.asyncness = None;
    let output = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let name = sig.ident.to_string();
    let krate = options.krate;
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis #sig {
            let body = async move #block;
            #krate::__private::run_test::<_, #output>(#name, body)
        }
    })
}

struct TestOptions {
    krate: syn::Path,
}

impl TestOptions {
    fn parse(args: Punctuated<Meta, Token![,]>) -> syn::Result<Self> {
        let mut flavor: Option<(String, Span)> = None;
        let mut worker_threads: Option<Span> = None;
        let mut start_paused: Option<Span> = None;
        let mut krate: Option<syn::Path> = None;
        for arg in args {
            let Meta::NameValue(nv) = &arg else {
                return Err(syn::Error::new(
                    arg.span(),
                    "unknown attribute inside the macro; expected `name = value`",
                ));
            };
            let name = nv
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let span = nv.value.span();
            match name.as_str() {
                "flavor" => {
                    let value = string_value(&nv.value, "flavor")?;
                    if value != "current_thread" && value != "multi_thread" {
                        return Err(syn::Error::new(
                            span,
                            format!(
                                "No such runtime flavor `{value}`. The runtime flavors are `current_thread` and `multi_thread`."
                            ),
                        ));
                    }
                    flavor = Some((value, span));
                }
                "worker_threads" => {
                    let ok = matches!(
                        &nv.value,
                        Expr::Lit(l) if matches!(&l.lit, Lit::Int(i) if i.base10_parse::<usize>().is_ok_and(|n| n > 0))
                    );
                    if !ok {
                        return Err(syn::Error::new(
                            span,
                            "Failed to parse value of `worker_threads` as integer: a positive integer is expected.",
                        ));
                    }
                    worker_threads = Some(span);
                }
                "start_paused" => {
                    let ok = matches!(&nv.value, Expr::Lit(l) if matches!(l.lit, Lit::Bool(_)));
                    if !ok {
                        return Err(syn::Error::new(
                            span,
                            "Failed to parse value of `start_paused` as bool.",
                        ));
                    }
                    start_paused = Some(span);
                }
                "crate" => {
                    let value = string_value(&nv.value, "crate")?;
                    krate = Some(syn::parse_str(&value).map_err(|_| {
                        syn::Error::new(
                            span,
                            format!("Failed to parse value of `crate` as path: \"{value}\""),
                        )
                    })?);
                }
                "unhandled_panic" => {
                    return Err(syn::Error::new(
                        nv.path.span(),
                        "The `unhandled_panic` option requires tokio_unstable, which a kube-wasm guest does not provide.",
                    ));
                }
                _ => {
                    return Err(syn::Error::new(
                        nv.path.span(),
                        format!(
                            "Unknown attribute {name} is specified; expected one of: `flavor`, `worker_threads`, `start_paused`, `crate`, `unhandled_panic`."
                        ),
                    ));
                }
            }
        }
        let multi_thread = matches!(&flavor, Some((f, _)) if f == "multi_thread");
        if let (false, Some(span)) = (multi_thread, worker_threads) {
            return Err(syn::Error::new(
                span,
                "The `worker_threads` option requires the `multi_thread` runtime flavor. Use `#[tokio::test(flavor = \"multi_thread\")]`",
            ));
        }
        if let (true, Some(span)) = (multi_thread, start_paused) {
            return Err(syn::Error::new(
                span,
                "The `start_paused` option requires the `current_thread` runtime flavor. Use `#[tokio::test(flavor = \"current_thread\")]`",
            ));
        }
        Ok(TestOptions {
            krate: krate.unwrap_or_else(|| syn::parse_quote!(::tokio)),
        })
    }
}

fn string_value(value: &Expr, name: &str) -> syn::Result<String> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        _ => Err(syn::Error::new(
            value.span(),
            format!("Failed to parse value of `{name}` as string."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{ItemFn, Meta, Punctuated, Token, expand_test};
    use syn::parse::Parser;

    fn expand(args: &str, item: &str) -> Result<String, String> {
        let args = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse_str(args)
            .unwrap();
        let item: ItemFn = syn::parse_str(item).unwrap();
        expand_test(args, item)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_what_tokio_accepts() {
        for args in [
            "",
            r#"flavor = "current_thread""#,
            r#"flavor = "current_thread", start_paused = true"#,
            "start_paused = false",
            r#"flavor = "multi_thread""#,
            r#"flavor = "multi_thread", worker_threads = 4"#,
            r#"crate = "my_tokio""#,
        ] {
            let out = expand(args, "async fn t() {}").expect(args);
            assert!(out.contains("__private :: run_test"), "{out}");
        }
        let out = expand(r#"crate = "my_tokio""#, "async fn t() {}").unwrap();
        assert!(out.contains("my_tokio :: __private"), "{out}");
    }

    #[test]
    fn rejects_what_tokio_rejects() {
        for (args, item, message) in [
            ("", "fn t() {}", "the `async` keyword is missing"),
            ("", "async fn t(x: u8) {}", "cannot accept arguments"),
            ("", "#[test] async fn t() {}", "second test attribute"),
            (
                r#"flavor = "threaded""#,
                "async fn t() {}",
                "No such runtime flavor",
            ),
            (
                "worker_threads = 2",
                "async fn t() {}",
                "requires the `multi_thread`",
            ),
            (
                r#"flavor = "multi_thread", start_paused = true"#,
                "async fn t() {}",
                "requires the `current_thread`",
            ),
            ("worker_threads = 0", "async fn t() {}", "worker_threads"),
            ("start_paused = 1", "async fn t() {}", "start_paused"),
            (
                r#"unhandled_panic = "ignore""#,
                "async fn t() {}",
                "tokio_unstable",
            ),
            (
                "threads = 2",
                "async fn t() {}",
                "Unknown attribute threads",
            ),
        ] {
            let err = expand(args, item).expect_err(args);
            assert!(err.contains(message), "{args}: {err}");
        }
    }
}
