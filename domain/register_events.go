package domain

// RegisterEvents registers every event of the aggregates in this package
// (provider, tariff, channel, category, admin and account with its
// subscriptions and devices) with r. It panics on a duplicate, like
// Registry.Register: call it once per registry, at start-up.
func RegisterEvents(r *Registry) {
	registerProviderEvents(r)
	registerTariffEvents(r)
	registerChannelEvents(r)
	registerCategoryEvents(r)
	registerAdminEvents(r)
	registerAccountEvents(r)
}
