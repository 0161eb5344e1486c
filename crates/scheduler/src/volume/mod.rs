//! Persistent storage as the volume plugins see it: the PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses and CSINodes of the cluster ([`VolumeIndex`], kept in the
//! [`Snapshot`](crate::snapshot::Snapshot)), the volumes a pod references ([`PodVolumeRefs`],
//! parsed once in [`PodInfo::from_pod`](crate::framework::PodInfo::from_pod)), the helpers of
//! `k8s.io/component-helpers/storage/volume` ([`helpers`]), in-tree → CSI migration as v1.22's
//! feature gates default it ([`csi`]), and the pure half of v1.22's volume binder ([`binder`]).
//!
//! Everything here is synchronous and free of API calls. The API writes of the binder's
//! PreBind step live in `controller::volume_binding` (feature `cluster`).

pub mod binder;
pub mod csi;
mod error;
pub mod helpers;
mod index;
mod refs;
#[cfg(test)]
pub(crate) mod testutil;

pub use error::VolumeError;
pub use index::{AssumedPodVolumes, BindingInfo, PodVolumes, VolumeIndex};
pub use refs::{InlineVolume, PodVolumeRefs, VolumeRef};
