// Package convert is the Greenhouse webhook's conversion through the hub (v1), as each
// release shipped it: the releases differ only in what they forget (Release's fields), the
// way one project's conversion file differs from tag to tag.
package convert

import (
	v1 "gate.example.com/greenhouse/api/v1"
	"gate.example.com/greenhouse/api/v1alpha1"
	"gate.example.com/greenhouse/server"
)

// Release says which bugs a release of the webhook ships with.
type Release struct {
	// ForgetsAutoVent: from the hub to v1alpha1, spec.climate.autoVent is not copied
	// (release 1's bug: a greenhouse with automatic vents read through v1alpha1 and
	// written back has them off).
	ForgetsAutoVent bool
	// ForgetsPressureCompensating: from the hub to v1alpha1, spec.zones[].beds[].irrigation
	// .drip.emitter.pressureCompensating is not copied (release 3's regression, 7 levels
	// down: random objects rarely reach so deep; the gate's coverage objects do).
	ForgetsPressureCompensating bool
}

// Conversion is this release's pair of conversions, for server.Main.
func (r Release) Conversion() server.Conversion {
	return server.Conversion{ToHub: r.toHub, FromHub: r.fromHub}
}

func (r Release) toHub(src *v1alpha1.Greenhouse, dst *v1.Greenhouse) {
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Location = src.Spec.Location
	dst.Spec.Climate = &v1.Climate{
		TargetCelsius: src.Spec.TargetTemperature,
		AutoVent:      src.Spec.AutoVent,
	}
	for _, zone := range src.Spec.Zones {
		out := v1.Zone{Name: zone.Name}
		for _, bed := range zone.Beds {
			out.Beds = append(out.Beds, v1.Bed{Crop: bed.Crop, Irrigation: irrigationToHub(bed.Irrigation)})
		}
		dst.Spec.Zones = append(dst.Spec.Zones, out)
	}
	dst.Status = v1.GreenhouseStatus(src.Status)
}

func irrigationToHub(src *v1alpha1.Irrigation) *v1.Irrigation {
	if src == nil {
		return nil
	}
	dst := &v1.Irrigation{Minutes: src.Minutes}
	if src.Drip != nil {
		dst.Drip = &v1.Drip{Lines: src.Drip.Lines}
		if e := src.Drip.Emitter; e != nil {
			dst.Drip.Emitter = &v1.Emitter{
				LitersPerHour:        e.LitersPerHour,
				PressureCompensating: e.PressureCompensating,
			}
		}
	}
	return dst
}

func (r Release) fromHub(src *v1.Greenhouse, dst *v1alpha1.Greenhouse) {
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Location = src.Spec.Location
	if c := src.Spec.Climate; c != nil {
		dst.Spec.TargetTemperature = c.TargetCelsius
		if !r.ForgetsAutoVent {
			dst.Spec.AutoVent = c.AutoVent
		}
	}
	for _, zone := range src.Spec.Zones {
		out := v1alpha1.Zone{Name: zone.Name}
		for _, bed := range zone.Beds {
			out.Beds = append(out.Beds, v1alpha1.Bed{Crop: bed.Crop, Irrigation: r.irrigationFromHub(bed.Irrigation)})
		}
		dst.Spec.Zones = append(dst.Spec.Zones, out)
	}
	dst.Status = v1alpha1.GreenhouseStatus(src.Status)
}

func (r Release) irrigationFromHub(src *v1.Irrigation) *v1alpha1.Irrigation {
	if src == nil {
		return nil
	}
	dst := &v1alpha1.Irrigation{Minutes: src.Minutes}
	if src.Drip != nil {
		dst.Drip = &v1alpha1.Drip{Lines: src.Drip.Lines}
		if e := src.Drip.Emitter; e != nil {
			dst.Drip.Emitter = &v1alpha1.Emitter{LitersPerHour: e.LitersPerHour}
			if !r.ForgetsPressureCompensating {
				dst.Drip.Emitter.PressureCompensating = e.PressureCompensating
			}
		}
	}
	return dst
}
