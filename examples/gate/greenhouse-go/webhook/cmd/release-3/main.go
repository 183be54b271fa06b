// Release 3 of the Greenhouse webhook, with a regression 7 levels down: converting from the
// hub (v1) to v1alpha1 it forgets spec.zones[].beds[].irrigation.drip.emitter
// .pressureCompensating. Random objects rarely reach so deep; the gate's coverage objects do.
package main

import (
	"gate.example.com/greenhouse/convert"
	"gate.example.com/greenhouse/server"
)

func main() {
	server.Main("release-3", convert.Release{ForgetsPressureCompensating: true}.Conversion())
}
