// Release 1 of the Greenhouse webhook, with a bug: converting from the hub (v1) to
// v1alpha1 it forgets spec.climate.autoVent, so a greenhouse with automatic vents (true)
// read through v1alpha1 and written back has them off.
package main

import (
	v1 "gate.example.com/greenhouse/api/v1"
	"gate.example.com/greenhouse/api/v1alpha1"
	"gate.example.com/greenhouse/server"
)

func main() {
	server.Main("release-1", server.Conversion{ToHub: toHub, FromHub: fromHub})
}

func toHub(src *v1alpha1.Greenhouse, dst *v1.Greenhouse) {
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

func fromHub(src *v1.Greenhouse, dst *v1alpha1.Greenhouse) {
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Location = src.Spec.Location
	if c := src.Spec.Climate; c != nil {
		dst.Spec.TargetTemperature = c.TargetCelsius // the bug: AutoVent is not copied
	}
	for _, zone := range src.Spec.Zones {
		out := v1alpha1.Zone{Name: zone.Name}
		for _, bed := range zone.Beds {
			out.Beds = append(out.Beds, v1alpha1.Bed{Crop: bed.Crop, Irrigation: irrigationFromHub(bed.Irrigation)})
		}
		dst.Spec.Zones = append(dst.Spec.Zones, out)
	}
	dst.Status = v1alpha1.GreenhouseStatus(src.Status)
}

func irrigationFromHub(src *v1.Irrigation) *v1alpha1.Irrigation {
	if src == nil {
		return nil
	}
	dst := &v1alpha1.Irrigation{Minutes: src.Minutes}
	if src.Drip != nil {
		dst.Drip = &v1alpha1.Drip{Lines: src.Drip.Lines}
		if e := src.Drip.Emitter; e != nil {
			dst.Drip.Emitter = &v1alpha1.Emitter{
				LitersPerHour:        e.LitersPerHour,
				PressureCompensating: e.PressureCompensating,
			}
		}
	}
	return dst
}
