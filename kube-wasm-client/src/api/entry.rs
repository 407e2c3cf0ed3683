//! API helpers for get-or-create and get-and-modify patterns, as `kube::api::entry` in
//! kube 5.0.
//!
//! [`Api::entry`] is the entry point:
//!
//! ```no_run
//! # async fn f(api: kube_wasm_client::Api<k8s_openapi::api::core::v1::ConfigMap>)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use kube_wasm_client::api::PostParams;
//! let mut entry = api
//!     .entry("settings")
//!     .await?
//!     .or_insert(Default::default)
//!     .and_modify(|cm| {
//!         cm.data.get_or_insert_with(Default::default).insert("mode".into(), "fast".into());
//!     });
//! entry.commit(&PostParams::default()).await?; // creates, or replaces if it existed
//! # Ok(()) }
//! ```

use crate::{Api, Error, Result};
use kube_core::{Resource, params::PostParams};
use serde::{Serialize, de::DeserializeOwned};
use std::fmt::Debug;

impl<K: Resource + Clone + DeserializeOwned + Debug> Api<K> {
    /// Gets the object `name` (with [`Api::get_opt`]) as an [`Entry`] to inspect, create or
    /// modify and then [`OccupiedEntry::commit`].
    ///
    /// # Errors
    /// Every error of [`Api::get_opt`] (not-found is [`Entry::Vacant`], not an error).
    pub async fn entry<'a>(&'a self, name: &'a str) -> Result<Entry<'a, K>> {
        Ok(match self.get_opt(name).await? {
            Some(object) => Entry::Occupied(OccupiedEntry {
                api: self,
                dirtiness: Dirtiness::Clean,
                name,
                object,
            }),
            None => Entry::Vacant(VacantEntry { api: self, name }),
        })
    }
}

/// A view of one named object that may or may not exist.
#[derive(Debug)]
pub enum Entry<'a, K> {
    /// The object exists (or was inserted locally).
    Occupied(OccupiedEntry<'a, K>),
    /// The object does not exist.
    Vacant(VacantEntry<'a, K>),
}

impl<'a, K> Entry<'a, K> {
    /// The object, if occupied.
    pub fn get(&self) -> Option<&K> {
        match self {
            Entry::Occupied(entry) => Some(entry.get()),
            Entry::Vacant(_) => None,
        }
    }

    /// The object for modification, if occupied; marks the entry dirty (a later commit
    /// replaces it).
    pub fn get_mut(&mut self) -> Option<&mut K> {
        match self {
            Entry::Occupied(entry) => Some(entry.get_mut()),
            Entry::Vacant(_) => None,
        }
    }

    /// Applies `f` to the object if occupied (marking it dirty); a vacant entry is returned
    /// as it is.
    pub fn and_modify(self, f: impl FnOnce(&mut K)) -> Self {
        match self {
            Entry::Occupied(entry) => Entry::Occupied(entry.and_modify(f)),
            entry @ Entry::Vacant(_) => entry,
        }
    }

    /// The occupied entry, or a new one holding `default()` (to be created on commit).
    pub fn or_insert(self, default: impl FnOnce() -> K) -> OccupiedEntry<'a, K>
    where
        K: Resource,
    {
        match self {
            Entry::Occupied(entry) => entry,
            Entry::Vacant(entry) => entry.insert(default()),
        }
    }
}

/// An object that exists, or is to be created on [`OccupiedEntry::commit`].
#[derive(Debug)]
pub struct OccupiedEntry<'a, K> {
    api: &'a Api<K>,
    dirtiness: Dirtiness,
    name: &'a str,
    object: K,
}

/// What a commit has to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dirtiness {
    /// Unchanged since it was read or last committed: nothing.
    Clean,
    /// Read from the server and modified locally: replace.
    Dirty,
    /// Inserted locally, not on the server yet: create.
    New,
}

impl<K> OccupiedEntry<'_, K> {
    /// The object.
    pub fn get(&self) -> &K {
        &self.object
    }

    /// The object for modification; marks the entry dirty (an inserted one stays new).
    pub fn get_mut(&mut self) -> &mut K {
        if self.dirtiness == Dirtiness::Clean {
            self.dirtiness = Dirtiness::Dirty;
        }
        &mut self.object
    }

    /// Applies `f` to the object, as [`OccupiedEntry::get_mut`].
    pub fn and_modify(mut self, f: impl FnOnce(&mut K)) -> Self {
        f(self.get_mut());
        self
    }

    /// The object, dropping the entry.
    pub fn into_object(self) -> K {
        self.object
    }

    /// Saves the object: creates it if it was inserted, replaces it if it was modified,
    /// does nothing if it is unchanged; then holds the object the server returned and is
    /// clean again (unless `pp.dry_run`, which leaves it as it was).
    ///
    /// Before saving, a missing `metadata.name` / `metadata.namespace` is filled in from the
    /// entry's name and the Api's namespace.
    ///
    /// # Errors
    /// [`CommitError::Validate`] if the object's name or namespace differ from the entry's
    /// or `metadata.generateName` is set (nothing is sent); [`CommitError::Save`] with the
    /// Api's error otherwise — e.g. `is_conflict()` when the object changed on the server
    /// since it was read, `is_already_exists()` when it was created meanwhile.
    pub async fn commit(&mut self, pp: &PostParams) -> Result<(), CommitError>
    where
        K: Resource + DeserializeOwned + Serialize + Clone + Debug,
    {
        self.prepare_for_commit()?;
        match self.dirtiness {
            Dirtiness::New => {
                self.object = self
                    .api
                    .create(pp, &self.object)
                    .await
                    .map_err(CommitError::Save)?;
            }
            Dirtiness::Dirty => {
                self.object = self
                    .api
                    .replace(self.name, pp, &self.object)
                    .await
                    .map_err(CommitError::Save)?;
            }
            Dirtiness::Clean => {}
        }
        if !pp.dry_run {
            self.dirtiness = Dirtiness::Clean;
        }
        Ok(())
    }

    /// Fills in and checks name and namespace, without marking the entry dirty.
    fn prepare_for_commit(&mut self) -> Result<(), CommitValidationError>
    where
        K: Resource,
    {
        let expected_ns = self.api.namespace();
        let meta = self.object.meta_mut();
        match &meta.name {
            None => meta.name = Some(self.name.to_string()),
            Some(name) if name != self.name => {
                return Err(CommitValidationError::NameMismatch {
                    object_name: name.clone(),
                    expected: self.name.to_string(),
                });
            }
            Some(_) => {}
        }
        match &meta.namespace {
            None => meta.namespace = expected_ns.map(str::to_string),
            Some(ns) if Some(ns.as_str()) != expected_ns => {
                return Err(CommitValidationError::NamespaceMismatch {
                    object_namespace: Some(ns.clone()),
                    expected: expected_ns.map(str::to_string),
                });
            }
            Some(_) => {}
        }
        if let Some(generate_name) = &meta.generate_name {
            return Err(CommitValidationError::GenerateName {
                object_generate_name: generate_name.clone(),
            });
        }
        Ok(())
    }
}

/// Committing an [`OccupiedEntry`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The object was not valid to save; nothing was sent.
    #[error("failed to validate object for saving: {0}")]
    Validate(#[from] CommitValidationError),
    /// The create or replace failed.
    #[error("failed to save object: {0}")]
    Save(#[source] Error),
}

/// Why an object was not valid to commit.
#[derive(Debug, thiserror::Error)]
pub enum CommitValidationError {
    /// `metadata.name` differs from the name given to [`Api::entry`].
    #[error(
        ".metadata.name does not match the name passed to Api::entry (got: {object_name:?}, expected: {expected:?})"
    )]
    NameMismatch {
        /// The object's name.
        object_name: String,
        /// The entry's name.
        expected: String,
    },
    /// `metadata.namespace` differs from the Api's namespace.
    #[error(
        ".metadata.namespace does not match the namespace of the Api (got: {object_namespace:?}, expected: {expected:?})"
    )]
    NamespaceMismatch {
        /// The object's namespace.
        object_namespace: Option<String>,
        /// The Api's namespace.
        expected: Option<String>,
    },
    /// `metadata.generateName` is set: an entry has a fixed name.
    #[error(".metadata.generate_name must not be set (got: {object_generate_name:?})")]
    GenerateName {
        /// The object's `generateName`.
        object_generate_name: String,
    },
}

/// An object that does not exist.
#[derive(Debug)]
pub struct VacantEntry<'a, K> {
    api: &'a Api<K>,
    name: &'a str,
}

impl<'a, K> VacantEntry<'a, K> {
    /// Inserts `object` locally, to be created on [`OccupiedEntry::commit`].
    pub fn insert(self, object: K) -> OccupiedEntry<'a, K>
    where
        K: Resource,
    {
        OccupiedEntry {
            api: self.api,
            dirtiness: Dirtiness::New,
            name: self.name,
            object,
        }
    }
}
