//! [`ObjectRef`] and [`Lookup`], as kube-runtime 5.0's `reflector::{ObjectRef, Lookup}`.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{ApiResource, DynamicObject, Resource, api_version_from_group_version};
use std::borrow::Cow;
use std::fmt::{self, Debug, Display};
use std::hash::{Hash, Hasher};

/// What a store needs to know about an object and its type, as kube-runtime 5.0's
/// `Lookup`. Every [`Resource`] implements it; the `DynamicType` is the resource's
/// (`()` for static types, `ApiResource` for `DynamicObject`).
pub trait Lookup {
    /// Type information for the resource's kind (as [`Resource::DynamicType`]).
    type DynamicType;

    /// The kind, e.g. `ConfigMap`.
    fn kind(dyntype: &Self::DynamicType) -> Cow<'_, str>;

    /// The API group, empty for the core group.
    fn group(dyntype: &Self::DynamicType) -> Cow<'_, str>;

    /// The API version, e.g. `v1`.
    fn version(dyntype: &Self::DynamicType) -> Cow<'_, str>;

    /// `group/version`, or only `version` for the core group.
    fn api_version(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        api_version_from_group_version(Self::group(dyntype), Self::version(dyntype))
    }

    /// The plural resource name, e.g. `configmaps`.
    fn plural(dyntype: &Self::DynamicType) -> Cow<'_, str>;

    /// `metadata.name`.
    fn name(&self) -> Option<Cow<'_, str>>;

    /// `metadata.namespace`.
    fn namespace(&self) -> Option<Cow<'_, str>>;

    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<Cow<'_, str>>;

    /// `metadata.uid`.
    fn uid(&self) -> Option<Cow<'_, str>>;

    /// A reference to this object. An object without a name (which the API server never
    /// sends) gets an empty one, where kube panics.
    fn to_object_ref(&self, dyntype: Self::DynamicType) -> ObjectRef<Self> {
        ObjectRef {
            dyntype,
            name: self.name().map(Cow::into_owned).unwrap_or_default(),
            namespace: self.namespace().map(Cow::into_owned),
            extra: Extra {
                resource_version: self.resource_version().map(Cow::into_owned),
                uid: self.uid().map(Cow::into_owned),
            },
        }
    }
}

impl<K: Resource> Lookup for K {
    type DynamicType = K::DynamicType;

    fn kind(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dyntype)
    }

    fn group(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dyntype)
    }

    fn version(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dyntype)
    }

    fn plural(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dyntype)
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        self.meta().name.as_deref().map(Cow::Borrowed)
    }

    fn namespace(&self) -> Option<Cow<'_, str>> {
        self.meta().namespace.as_deref().map(Cow::Borrowed)
    }

    fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.meta().resource_version.as_deref().map(Cow::Borrowed)
    }

    fn uid(&self) -> Option<Cow<'_, str>> {
        self.meta().uid.as_deref().map(Cow::Borrowed)
    }
}

/// A reference to an object of type `K`: its type, name and namespace, as kube-runtime
/// 5.0's `ObjectRef`. Equality and hashing use only those three, not [`Extra`], so a
/// reference finds the object in a store whatever its version.
#[non_exhaustive]
pub struct ObjectRef<K: Lookup + ?Sized> {
    /// The type information.
    pub dyntype: K::DynamicType,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// What else is known (not part of equality).
    pub extra: Extra,
}

/// Optional details of an [`ObjectRef`], as kube-runtime 5.0's `ObjectRefExtra`.
#[derive(Default, Debug, Clone)]
#[non_exhaustive]
pub struct Extra {
    /// `metadata.resourceVersion`, if known.
    pub resource_version: Option<String>,
    /// `metadata.uid`, if known.
    pub uid: Option<String>,
}

impl<K: Lookup + ?Sized> Debug for ObjectRef<K>
where
    K::DynamicType: Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("dyntype", &self.dyntype)
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("extra", &self.extra)
            .finish()
    }
}

impl<K: Lookup + ?Sized> Clone for ObjectRef<K>
where
    K::DynamicType: Clone,
{
    fn clone(&self) -> Self {
        Self {
            dyntype: self.dyntype.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            extra: self.extra.clone(),
        }
    }
}

impl<K: Lookup + ?Sized> PartialEq for ObjectRef<K>
where
    K::DynamicType: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.dyntype == other.dyntype
            && self.name == other.name
            && self.namespace == other.namespace
    }
}

impl<K: Lookup + ?Sized> Eq for ObjectRef<K> where K::DynamicType: Eq {}

impl<K: Lookup + ?Sized> Hash for ObjectRef<K>
where
    K::DynamicType: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.dyntype.hash(state);
        self.name.hash(state);
        self.namespace.hash(state);
    }
}

impl<K: Lookup> ObjectRef<K>
where
    K::DynamicType: Default,
{
    /// A reference to the cluster-scoped object `name` (add a namespace with
    /// [`ObjectRef::within`]).
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self::new_with(name, Default::default())
    }

    /// A reference to `obj`.
    #[must_use]
    pub fn from_obj(obj: &K) -> Self {
        obj.to_object_ref(Default::default())
    }
}

impl<K: Lookup> From<&K> for ObjectRef<K>
where
    K::DynamicType: Default,
{
    fn from(obj: &K) -> Self {
        Self::from_obj(obj)
    }
}

impl<K: Lookup> ObjectRef<K> {
    /// A reference to the cluster-scoped object `name` of the type `dyntype`.
    #[must_use]
    pub fn new_with(name: &str, dyntype: K::DynamicType) -> Self {
        Self {
            dyntype,
            name: name.to_string(),
            namespace: None,
            extra: Extra::default(),
        }
    }

    /// The same reference in `namespace`.
    #[must_use]
    pub fn within(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// A reference to `obj` of the type `dyntype`.
    #[must_use]
    pub fn from_obj_with(obj: &K, dyntype: K::DynamicType) -> Self {
        obj.to_object_ref(dyntype)
    }

    /// A reference to the owner `owner` (of an object in `namespace`) if it is of type
    /// `K`, else `None`.
    #[must_use]
    pub fn from_owner_ref(
        namespace: Option<&str>,
        owner: &OwnerReference,
        dyntype: K::DynamicType,
    ) -> Option<Self> {
        if owner.api_version == K::api_version(&dyntype) && owner.kind == K::kind(&dyntype) {
            Some(Self {
                dyntype,
                name: owner.name.clone(),
                namespace: namespace.map(String::from),
                extra: Extra {
                    resource_version: None,
                    uid: Some(owner.uid.clone()),
                },
            })
        } else {
            None
        }
    }

    /// The same reference as another type `K2`, without checking that it is one.
    #[must_use]
    pub fn into_kind_unchecked<K2: Lookup>(self, dt2: K2::DynamicType) -> ObjectRef<K2> {
        ObjectRef {
            dyntype: dt2,
            name: self.name,
            namespace: self.namespace,
            extra: self.extra,
        }
    }

    /// The same reference with its type as data (a `DynamicObject` reference).
    pub fn erase(self) -> ObjectRef<DynamicObject> {
        ObjectRef {
            dyntype: ApiResource {
                group: K::group(&self.dyntype).to_string(),
                version: K::version(&self.dyntype).to_string(),
                api_version: K::api_version(&self.dyntype).to_string(),
                kind: K::kind(&self.dyntype).to_string(),
                plural: K::plural(&self.dyntype).to_string(),
            },
            name: self.name,
            namespace: self.namespace,
            extra: self.extra,
        }
    }
}

impl<K: Lookup> From<ObjectRef<K>> for ObjectReference {
    fn from(val: ObjectRef<K>) -> Self {
        ObjectReference {
            api_version: Some(K::api_version(&val.dyntype).into_owned()),
            kind: Some(K::kind(&val.dyntype).into_owned()),
            field_path: None,
            name: Some(val.name),
            namespace: val.namespace,
            resource_version: val.extra.resource_version,
            uid: val.extra.uid,
        }
    }
}

/// `Kind.version.group/name`, then `.namespace` if namespaced, as kube's.
impl<K: Lookup> Display for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}/{}",
            K::kind(&self.dyntype),
            K::version(&self.dyntype),
            K::group(&self.dyntype),
            self.name
        )?;
        if let Some(namespace) = &self.namespace {
            write!(f, ".{namespace}")?;
        }
        Ok(())
    }
}
