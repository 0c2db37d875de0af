//! Builder-style setters for the `#[non_exhaustive]` data types users build.
//!
//! A type marked `#[non_exhaustive]` cannot be written as a struct literal outside this
//! crate, so that adding a field is not a breaking change. Users start from `default()`
//! (or the type's constructor) and set what they need: either field by field on a `mut`
//! value, or with the `with_*` methods this macro writes, one per field.

/// `setters!(Type { with_field => field: FieldType, ... })` writes a `#[must_use]`
/// `with_field(self, value) -> Self` for each listed field.
macro_rules! setters {
    ($ty:ident { $($method:ident => $field:ident : $fty:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Returns `self` with [`", stringify!($field), "`](Self::",
                    stringify!($field), ") set to `value`.")]
                #[must_use]
                pub fn $method(mut self, value: $fty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
