//! [`Activation`], the one vocabulary of pointwise nonlinearities used by every layer, model and
//! configuration file of chi.

use chi_autodiff::{Float, Tensor};
use std::fmt;
use std::str::FromStr;

/// A pointwise nonlinearity.
///
/// Used as a layer option (e.g. [`crate::layers::Conv1dText`]), as a [`crate::Module`] of its
/// own (in a [`crate::Sequential`]), and as a configuration value: it parses from its lower-case
/// name ([`FromStr`], also accepting `"linear"`/`"none"` for [`Activation::Identity`] and
/// `"swish"` for [`Activation::Silu`]) and prints as that name ([`fmt::Display`]); serde uses
/// the same names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// `x`.
    #[default]
    Identity,
    /// `max(0, x)`.
    Relu,
    /// `tanh x`.
    Tanh,
    /// `σ(x) = 1 / (1 + e⁻ˣ)`.
    Sigmoid,
    /// `x·Φ(x)` (Gaussian error linear unit, the tanh approximation of the autodiff op).
    Gelu,
    /// `x·σ(x)` (sigmoid-weighted linear unit, also called swish).
    Silu,
    /// `log(1 + eˣ)`.
    Softplus,
}

impl Activation {
    /// Every activation, in declaration order.
    pub const ALL: [Activation; 7] =
        [Activation::Identity, Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Gelu, Activation::Silu, Activation::Softplus];

    /// The lower-case name (`"relu"`, `"tanh"`, …), as parsed by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            Activation::Identity => "identity",
            Activation::Relu => "relu",
            Activation::Tanh => "tanh",
            Activation::Sigmoid => "sigmoid",
            Activation::Gelu => "gelu",
            Activation::Silu => "silu",
            Activation::Softplus => "softplus",
        }
    }

    /// Applies the activation (a differentiable op on `x`).
    pub fn apply<T: Float>(self, x: &Tensor<T>) -> Tensor<T> {
        match self {
            Activation::Identity => x.clone(),
            Activation::Relu => x.relu(),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => x.sigmoid(),
            Activation::Gelu => x.gelu(),
            Activation::Silu => x.silu(),
            Activation::Softplus => x.softplus(),
        }
    }
}

impl fmt::Display for Activation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing an [`Activation`]: the text and the names that exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseActivationError {
    /// The text that is not an activation name.
    pub input: String,
}

impl fmt::Display for ParseActivationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Activation::ALL.iter().map(|a| a.name()).collect();
        write!(f, "unknown activation {:?} (choices: {})", self.input, known.join(", "))
    }
}

impl std::error::Error for ParseActivationError {}

impl From<ParseActivationError> for crate::NnError {
    fn from(e: ParseActivationError) -> Self {
        crate::NnError::Unknown {
            context: String::new(),
            kind: "activation".into(),
            name: e.input,
            known: Activation::ALL.iter().map(|a| a.name().to_string()).collect(),
        }
    }
}

impl FromStr for Activation {
    type Err = ParseActivationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let alias = match t.as_str() {
            "linear" | "none" => Some(Activation::Identity),
            "swish" => Some(Activation::Silu),
            _ => None,
        };
        alias.or_else(|| Activation::ALL.into_iter().find(|a| a.name() == t)).ok_or(ParseActivationError { input: s.to_string() })
    }
}

impl serde::Serialize for Activation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Activation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for a in Activation::ALL {
            assert_eq!(a.name().parse::<Activation>().unwrap(), a);
            assert_eq!(a.to_string(), a.name());
        }
        assert_eq!("ReLU".parse::<Activation>().unwrap(), Activation::Relu);
        assert_eq!("linear".parse::<Activation>().unwrap(), Activation::Identity);
        let e = "tanhh".parse::<Activation>().unwrap_err().to_string();
        assert!(e.contains("\"tanhh\"") && e.contains("relu, tanh, sigmoid"), "{e}");
    }

    #[test]
    fn apply_matches_the_ops() {
        let x = Tensor::<f64>::from_vec(vec![-1.5, 0.0, 2.0], &[3]);
        assert_eq!(Activation::Relu.apply(&x).to_vec(), vec![0.0, 0.0, 2.0]);
        assert_eq!(Activation::Identity.apply(&x).to_vec(), x.to_vec());
        let s = Activation::Softplus.apply(&x).to_vec();
        assert!((s[1] - 2f64.ln()).abs() < 1e-12);
        let t = Activation::Tanh.apply(&x).to_vec();
        assert!((t[2] - 2f64.tanh()).abs() < 1e-12);
    }
}
