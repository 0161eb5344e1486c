//! [`VolumeError`]: why a volume lookup, check or assumption failed, in kube-scheduler v1.22's
//! words (these texts end up in pod statuses and events).

use crate::labels::InvalidOperator;

/// A failure of the volume binder, the volume index's assume cache, PV node affinity or CSI
/// translation. The message is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VolumeError {
    /// `podHasPVCs`: the pod's claim `claim` does not exist (lister view).
    #[error("persistentvolumeclaim {claim:?} not found")]
    ClaimNotFound {
        /// The claim's name.
        claim: String,
    },
    /// `podHasPVCs`: the pod's claim is being deleted.
    #[error("persistentvolumeclaim {claim:?} is being deleted")]
    ClaimBeingDeleted {
        /// The claim's name.
        claim: String,
    },
    /// `podHasPVCs`: a generic ephemeral volume's claim is not controlled by the pod.
    #[error("persistentvolumeclaim {claim:?} was not created for the pod")]
    ClaimNotCreatedForPod {
        /// The claim's name.
        claim: String,
    },
    /// `isVolumeBound` (assume view): the claim `namespace/name` is gone.
    #[error("error getting PVC {key:?}: could not find v1.PersistentVolumeClaim {key:?}")]
    ClaimMissing {
        /// `namespace/name`.
        key: String,
    },
    /// `isVolumeBound`: a generic ephemeral volume's claim is not owned by the pod.
    #[error("PVC {key} is not owned by pod")]
    ClaimNotOwnedByPod {
        /// `namespace/name`.
        key: String,
    },
    /// `IsDelayBindingMode`: the claim's StorageClass has no `volumeBindingMode`.
    #[error("VolumeBindingMode not set for StorageClass {class:?}")]
    BindingModeNotSet {
        /// The StorageClass.
        class: String,
    },
    /// `checkVolumeProvisions`: a claim to provision has no StorageClass.
    #[error("no class for claim {key:?}")]
    NoClass {
        /// `namespace/name`.
        key: String,
    },
    /// `checkVolumeProvisions`: the claim's StorageClass does not exist.
    #[error("failed to find storage class {class:?}")]
    UnknownClass {
        /// The StorageClass.
        class: String,
    },
    /// `FindMatchingVolume`: the claim's `spec.selector` has a bad operator.
    #[error("error creating internal label selector for claim: {key}: {source}")]
    ClaimSelector {
        /// `namespace/name`.
        key: String,
        /// The selector's problem.
        #[source]
        source: InvalidOperator,
    },
    /// `CheckNodeAffinity`: the PV's required node affinity does not match the node.
    #[error("no matching NodeSelectorTerms")]
    NoMatchingTerms,
    /// `TranslateInTreePVToCSI`: the PV has no in-tree source this scheduler migrates.
    #[error("pv is nil or no supported in-tree source defined on pv")]
    NoInTreeSource,
    /// `tryTranslatePVToCSI`: the translation failed.
    #[error("could not translate pv: {0}")]
    Translate(Box<VolumeError>),
    /// `assumeCache.Assume`: the object `key` of `kind` (`PersistentVolume`,
    /// `PersistentVolumeClaim`) is not in the cache.
    #[error("could not find v1.{kind} {key:?}")]
    NotInCache {
        /// The kind.
        kind: &'static str,
        /// The object's key.
        key: String,
    },
    /// `assumeCache.Assume`: the object to assume is older than the stored one.
    #[error("v1.{kind} {key:?} is out of sync (stored: {stored}, assume: {assume})")]
    OutOfSync {
        /// The kind.
        kind: &'static str,
        /// The object's key.
        key: String,
        /// The stored object's resourceVersion.
        stored: u64,
        /// The resourceVersion of the object to assume.
        assume: u64,
    },
}
