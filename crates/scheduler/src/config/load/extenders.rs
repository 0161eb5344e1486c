//! `extenders`: `validateExtenders` and each extender turned into the one the scheduler calls.

use super::*;

impl Validator<'_, '_> {
    /// `validateExtenders` and the conversion to the extender type the scheduler calls.
    pub(super) fn extenders(&mut self, c: &KubeSchedulerConfiguration) -> Vec<LegacyExtender> {
        let path = FieldPath::root().key("extenders");
        let mut binders = 0;
        let mut managed: BTreeSet<String> = BTreeSet::new();
        let mut out = Vec::new();
        for (i, e) in c.extenders.iter().enumerate() {
            let p = path.clone().index(i);
            if !e.prioritize_verb.is_empty() && e.weight <= 0 {
                self.error(
                    &p.clone().key("weight"),
                    format!(
                        "Invalid value: {}: must have a positive weight applied to it",
                        e.weight
                    ),
                );
            }
            if !e.bind_verb.is_empty() {
                binders += 1;
            }
            for (j, r) in e.managed_resources.iter().enumerate() {
                let rp = p.clone().key("managedResources").index(j).key("name");
                if !is_extended_resource_name(&r.name) {
                    self.error(
                        &rp,
                        format!(
                            "Invalid value: {:?}: must be a fully-qualified extended resource name \
                             (a domain outside kubernetes.io, e.g. example.com/foo)",
                            r.name
                        ),
                    );
                }
                if !managed.insert(r.name.clone()) {
                    self.error(
                        &rp,
                        format!(
                            "Invalid value: {:?}: duplicate extender managed resource name",
                            r.name
                        ),
                    );
                }
            }
            let http_timeout = match &e.http_timeout {
                None => 0,
                Some(t) => self.duration(p.clone().key("httpTimeout"), Some(t), 0),
            };
            out.push(LegacyExtender {
                url_prefix: e.url_prefix.clone(),
                filter_verb: e.filter_verb.clone(),
                preempt_verb: e.preempt_verb.clone(),
                prioritize_verb: e.prioritize_verb.clone(),
                weight: e.weight,
                bind_verb: e.bind_verb.clone(),
                enable_https: e.enable_https,
                tls_config: e.tls_config.as_ref().map(|t| ExtenderTlsConfig {
                    insecure: t.insecure,
                    server_name: t.server_name.clone(),
                    cert_file: t.cert_file.clone(),
                    key_file: t.key_file.clone(),
                    ca_file: t.ca_file.clone(),
                    cert_data: t.cert_data.clone(),
                    key_data: t.key_data.clone(),
                    ca_data: t.ca_data.clone(),
                }),
                http_timeout,
                node_cache_capable: e.node_cache_capable,
                managed_resources: e
                    .managed_resources
                    .iter()
                    .map(|r| ExtenderManagedResource {
                        name: r.name.clone(),
                        ignored_by_scheduler: r.ignored_by_scheduler,
                    })
                    .collect(),
                ignorable: e.ignorable,
            });
        }
        if binders > 1 {
            self.error(
                &path,
                format!("Invalid value: \"found {binders} extenders implementing bind\": only one extender can implement bind"),
            );
        }
        out
    }
}
