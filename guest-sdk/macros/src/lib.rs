//! `#[strategy]`: derives a module's `Strategy::OPERATIONS` (and `CONVERTS_LAZILY`) from the
//! methods its `impl Strategy` block implements, so an author never declares a hook twice (once as a method, once in a
//! list) and none is silently left uncalled. Re-exported by `strategy-guest-sdk`; see its docs.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{parse_macro_input, Error, ImplItem, ItemImpl};

/// The `Strategy` methods that are operations, and the `Operation` variant of each.
const OPERATIONS: [(&str, &str); 15] = [
    ("prepare_for_create", "PrepareForCreate"),
    ("validate", "Validate"),
    ("warnings_on_create", "WarningsOnCreate"),
    ("canonicalize", "Canonicalize"),
    ("prepare_for_update", "PrepareForUpdate"),
    ("validate_update", "ValidateUpdate"),
    ("warnings_on_update", "WarningsOnUpdate"),
    ("allow_create_on_update", "AllowCreateOnUpdate"),
    ("allow_unconditional_update", "AllowUnconditionalUpdate"),
    ("before_delete", "BeforeDelete"),
    ("after_create", "AfterCreate"),
    ("after_update", "AfterUpdate"),
    ("after_delete", "AfterDelete"),
    ("convert", "Convert"),
    ("convert_lazily", "Convert"),
];

/// On an `impl Strategy for T` block: adds `const OPERATIONS` listing exactly the operations
/// whose methods the block implements. A block that also declares `OPERATIONS` is refused.
#[proc_macro_attribute]
pub fn strategy(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = parse_macro_input!(item as ItemImpl);
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return Error::new_spanned(attr, "#[strategy] takes no arguments")
            .to_compile_error()
            .into();
    }
    let mut variants = Vec::new();
    let mut lazily = false;
    for item in &block.items {
        match item {
            ImplItem::Const(c) if c.ident == "OPERATIONS" => {
                return Error::new_spanned(
                    &c.ident,
                    "#[strategy] derives OPERATIONS from the methods implemented; remove this list",
                )
                .to_compile_error()
                .into();
            }
            ImplItem::Fn(f) => {
                let name = f.sig.ident.to_string();
                lazily |= name == "convert_lazily";
                if let Some((_, variant)) = OPERATIONS.iter().find(|(m, _)| *m == name) {
                    let variant = format_ident!("{}", variant);
                    if !variants.contains(&variant) {
                        variants.push(variant);
                    }
                }
            }
            _ => {}
        }
    }
    let operations = quote! {
        const OPERATIONS: &'static [::strategy_guest_sdk::Operation] =
            &[#(::strategy_guest_sdk::Operation::#variants),*];
    };
    block.items.push(syn::parse_quote!(#operations));
    if lazily {
        block.items.push(syn::parse_quote!(
            const CONVERTS_LAZILY: bool = true;
        ));
    }
    quote!(#block).into()
}
