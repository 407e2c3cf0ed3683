//! `#[kube_wasm_tokio::main]`, used as `#[tokio::main]` in a controller compiled to
//! wasm32-wasip1.
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

use proc_macro::TokenStream;
use quote::quote;
use syn::{ItemFn, parse_macro_input, spanned::Spanned};

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
