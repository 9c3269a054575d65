package domain

// RegisterEvents registers every event of the aggregates in this package
// (provider, tariff, tariff tag, channel, category, region, device type,
// admin, account with its subscriptions and devices, command sends and
// device sessions) with r. It panics on a duplicate, like
// Registry.Register: call it once per registry, at start-up.
func RegisterEvents(r *Registry) {
	registerProviderEvents(r)
	registerTariffEvents(r)
	registerChannelEvents(r)
	registerCategoryEvents(r)
	registerTariffTagEvents(r)
	registerRegionEvents(r)
	registerDeviceTypeEvents(r)
	registerAdminEvents(r)
	registerAccountEvents(r)
	registerNetworkEvents(r)
	registerCommandEvents(r)
	registerDeviceEvents(r)
	registerBillingEvents(r)
}
