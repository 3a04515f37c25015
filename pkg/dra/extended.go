package dra

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// Which DeviceClass serves an extended resource (KEP-5004) is the
// framework's DeviceClassResolver's answer, nothing else: DynamicResources
// allocates from that class alone. Two classes may name the same resource
// in spec.extendedResourceName (an operator moving from one class to
// another); kube-scheduler's cache (k8s.io/dynamic-resource-allocation
// deviceclass/extendedresourcecache, v0.37.2) then maps the name to the
// newer class, the smaller name breaking a tie. The other class still
// serves its implicit name, deviceclass.resource.kubernetes.io/<class>. The
// cache also forgets the name when either class is deleted, until the
// remaining one is updated or the scheduler restarts (docs/dra.md).

// ClassResource is the extended resource name the plugins count class c's
// devices under (Class.Resource): its spec.extendedResourceName when the
// resolver maps that name to c, else its implicit name. A class that names
// a resource another class serves is not that resource's: counting both
// would see every device of the resource twice.
func ClassResource(r fwk.DeviceClassResolver, c *resourceapi.DeviceClass) v1.ResourceName {
	if name := v1.ResourceName(ptr.Deref(c.Spec.ExtendedResourceName, "")); name != "" && r != nil {
		if s := r.GetDeviceClass(name); s != nil && s.Name == c.Name {
			return name
		}
	}
	return ImplicitResource(c.Name)
}

// NewResolver is the resolver of a kube-scheduler that has just listed
// classes: upstream's own cache, given the classes in list order as its
// informer would give them. For callers that hold the objects rather than
// the scheduler's informers (Objects).
func NewResolver(classes []*resourceapi.DeviceClass) fwk.DeviceClassResolver {
	c := extendedresourcecache.NewExtendedResourceCache(klog.Background())
	for _, dc := range classes {
		c.OnAdd(dc, true)
	}
	return c
}

// ExtendedResource is an extended resource that DeviceClasses name in
// spec.extendedResourceName, and the class serving it in a resolver's view.
type ExtendedResource struct {
	Name v1.ResourceName `json:"name"`
	// Class serves it; empty when no class does (the resolver forgot it).
	Class string `json:"class,omitempty"`
	// Named is every class naming it, newest first (the order the
	// resolver prefers them in).
	Named []string `json:"namedBy"`
}

// ExtendedResources lists the resources classes name, by name, with the
// class r resolves each to.
func ExtendedResources(classes []*resourceapi.DeviceClass, r fwk.DeviceClassResolver) []ExtendedResource {
	byName := map[v1.ResourceName][]*resourceapi.DeviceClass{}
	for _, c := range classes {
		if name := v1.ResourceName(ptr.Deref(c.Spec.ExtendedResourceName, "")); name != "" {
			byName[name] = append(byName[name], c)
		}
	}
	out := make([]ExtendedResource, 0, len(byName))
	for name, cs := range byName {
		slices.SortFunc(cs, func(a, b *resourceapi.DeviceClass) int {
			return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
		e := ExtendedResource{Name: name}
		for _, c := range cs {
			e.Named = append(e.Named, c.Name)
		}
		if r != nil {
			if s := r.GetDeviceClass(name); s != nil {
				e.Class = s.Name
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ExtendedResource) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
