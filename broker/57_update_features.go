package broker

// UpdateFeatures (key 57), v0-v2, as a Kafka 4.x cluster answers it
// (docs/features.md; the rules are package features'):
//
//   - ALTER on CLUSTER is needed (ControllerApis.handleUpdateFeatures);
//     without it the answer is CLUSTER_AUTHORIZATION_FAILED at the top
//     level and no rows (features-update-authorized).
//   - A refused row fails the request: INVALID_UPDATE_VERSION at the top
//     level with Kafka's message, no rows, nothing changed
//     (features-update-atomic).
//   - Success is NONE at the top level and, at v0-v1, one NONE row per
//     feature named (v2 has no rows); unless validate-only, the levels and
//     their epoch in ApiVersions change at once, and the data directory
//     keeps them (features-kept).
//   - v0 has no upgrade type: AllowDowngrade means a safe downgrade
//     (UpdateFeaturesRequest.getFeature).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/features"
)

func init() { register(57, 0, 2, handleUpdateFeatures) }

func handleUpdateFeatures(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !r.authorizedCluster(acl.OpAlter) {
		err := r.clusterDenied()
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	updates := make([]features.Update, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		t := features.UpgradeType(u.UpgradeType)
		if req.Version == 0 {
			t = features.Upgrade
			if u.AllowDowngrade {
				t = features.SafeDowngrade
			}
		}
		updates = append(updates, features.Update{Name: u.Feature, Level: u.MaxVersionLevel, Type: t})
	}
	shareWasOn := b.features.ShareGroupsOn()
	if err := b.features.Update(updates, req.ValidateOnly); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	if shareWasOn && !b.features.ShareGroupsOn() {
		// onShareVersionToggle (features-share-off-unloads).
		sessions, freed := b.shareServing.ShareGroupsOff()
		b.log.Info("share groups off", "sessions_dropped", sessions, "records_freed", freed)
	}
	if req.Version <= 1 {
		none := "NONE" // Errors.NONE.message(), which each row carries
		seen := make(map[string]bool, len(updates))
		for _, u := range updates {
			if seen[u.Name] {
				continue
			}
			seen[u.Name] = true
			row := kmsg.NewUpdateFeaturesResponseResult()
			row.Feature, row.ErrorMessage = u.Name, &none
			resp.Results = append(resp.Results, row)
		}
	}
	if !req.ValidateOnly {
		b.log.Info("features updated", "updates", len(updates))
	}
	return resp, nil
}
