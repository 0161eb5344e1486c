//! Node taints and pod tolerations (`v1.Taint`, `v1.Toleration`, `ToleratesTaint`).

/// A taint or toleration effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// `NoSchedule`.
    NoSchedule,
    /// `PreferNoSchedule`.
    PreferNoSchedule,
    /// `NoExecute`.
    NoExecute,
}

impl TaintEffect {
    pub(super) fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect; unknown effects are kept as `None` and never block scheduling.
    pub effect: Option<TaintEffect>,
}

impl Taint {
    /// Its effect is `NoSchedule` or `NoExecute`: the taints TaintToleration's filter reads
    /// (v1.22 `doNotScheduleTaintsFilterFunc`).
    pub fn is_do_not_schedule(&self) -> bool {
        matches!(
            self.effect,
            Some(TaintEffect::NoSchedule) | Some(TaintEffect::NoExecute)
        )
    }
}

/// `TolerationsTolerateTaint` (k8s.io/component-helpers `v1helper`): some toleration of
/// `tolerations` tolerates `taint`.
pub fn tolerations_tolerate_taint(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|tol| tol.tolerates(taint))
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Key; empty with `Exists` tolerates every taint.
    pub key: String,
    /// `Exists` when true, `Equal` (the default) otherwise; unknown operators tolerate nothing.
    pub operator: TolerationOperator,
    /// Value compared under `Equal`.
    pub value: String,
    /// Effect; `None` matches every effect.
    pub effect: Option<String>,
}

/// Toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TolerationOperator {
    /// `Equal` or empty.
    Equal,
    /// `Exists`.
    Exists,
    /// Anything else: tolerates nothing.
    Invalid,
}

impl Toleration {
    /// `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(e) = &self.effect {
            let te = match taint.effect {
                Some(TaintEffect::NoSchedule) => "NoSchedule",
                Some(TaintEffect::PreferNoSchedule) => "PreferNoSchedule",
                Some(TaintEffect::NoExecute) => "NoExecute",
                None => "",
            };
            if e != te {
                return false;
            }
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Equal => self.value == taint.value,
            TolerationOperator::Exists => true,
            TolerationOperator::Invalid => false,
        }
    }
}
