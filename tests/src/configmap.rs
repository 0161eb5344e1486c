//! A directory laid out as the kubelet lays out a ConfigMap volume, for hot-reload tests.
//!
//! The kubelet's `AtomicWriter` (`pkg/volume/util/atomic_writer.go`) writes each version of the
//! data into a new timestamped directory `..<timestamp>`, points a fresh `..data_tmp` symlink at
//! it and renames that over `..data`; each key is a symlink `<key> -> ..data/<key>`. A reader
//! that opens `<dir>/<key>` therefore sees either the old or the new version, never a mix.

use std::path::{Path, PathBuf};

/// A temporary ConfigMap-style volume with one key; removed on drop.
#[derive(Debug)]
pub struct ConfigMapVolume {
    root: PathBuf,
    key: String,
    version: u32,
}

impl ConfigMapVolume {
    /// Creates `<tmp>/<name>-<pid>/` holding `key` with `content`.
    ///
    /// # Panics
    /// On any I/O error.
    pub fn new(name: &str, key: &str, content: &str) -> ConfigMapVolume {
        let root = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create the volume directory");
        let mut v = ConfigMapVolume {
            root,
            key: key.to_string(),
            version: 0,
        };
        v.update(content);
        std::os::unix::fs::symlink(format!("..data/{key}"), v.file()).expect("key symlink");
        v
    }

    /// The volume directory.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// `<dir>/<key>`, the path a container reads.
    pub fn file(&self) -> PathBuf {
        self.root.join(&self.key)
    }

    /// Writes a new version with the kubelet's atomic symlink swap.
    ///
    /// # Panics
    /// On any I/O error.
    pub fn update(&mut self, content: &str) {
        self.version += 1;
        let ts = format!(
            "..2026_01_01_00_00_{:02}.{}",
            self.version % 60,
            self.version
        );
        let data = self.root.join(&ts);
        std::fs::create_dir(&data).expect("create the data directory");
        std::fs::write(data.join(&self.key), content).expect("write the data");
        let tmp = self.root.join("..data_tmp");
        std::os::unix::fs::symlink(&ts, &tmp).expect("..data_tmp symlink");
        std::fs::rename(&tmp, self.root.join("..data")).expect("swap ..data");
    }
}

impl Drop for ConfigMapVolume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
