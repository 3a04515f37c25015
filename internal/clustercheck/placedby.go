package clustercheck

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PlacedBy maps each pod of the namespace to the scheduler that bound it:
// the reporting controller of its Scheduled event. A scheduler reports as
// the schedulerName of the profile that placed the pod (upstream's
// profile.NewRecorderFactory), so two schedulers, or two profiles, are told
// apart by their events alone.
func PlacedBy(ctx context.Context, cs kubernetes.Interface, namespace string) (map[string]string, error) {
	evs, err := cs.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	out := map[string]string{}
	for _, e := range evs.Items {
		if e.Reason == "Scheduled" {
			out[e.Regarding.Name] = e.ReportingController
		}
	}
	return out, nil
}
