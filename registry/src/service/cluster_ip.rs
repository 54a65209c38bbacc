//! Cluster IPs as kube-apiserver allocates them since 1.33: each allocated address is an
//! `networking.k8s.io/v1` `IPAddress` object named by the address, whose creation is the
//! atomic claim (a second claim of the address fails with AlreadyExists), and whose parentRef
//! names the Service holding it.

use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Value};

use crate::delete::DeleteOptions;
use crate::error::Error;
use crate::store::{RegistryStore, RequestScope};
use crate::strategy::{FieldError, StrategyError};

/// The label kube-apiserver's allocator marks its IPAddresses with.
const MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
/// Its value.
const ALLOCATOR: &str = "ipallocator.k8s.io";
/// How many random addresses are tried before the range is walked in order.
const RANDOM_TRIES: usize = 32;

/// The range Service cluster IPs come from (`--service-cluster-ip-range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceIpRange {
    net: IpNet,
}

impl Default for ServiceIpRange {
    /// kube-apiserver's default, `10.96.0.0/12`.
    fn default() -> Self {
        Self {
            net: "10.96.0.0/12".parse().expect("a valid CIDR"),
        }
    }
}

impl std::fmt::Display for ServiceIpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.net.fmt(f)
    }
}

/// Why a `--service-cluster-ip-range` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServiceIpRangeError {
    /// Two CIDRs (dual stack).
    #[error("{0:?}: dual-stack service ranges are not supported; give one CIDR")]
    DualStack(String),
    /// Not a CIDR.
    #[error("{range:?} is not a CIDR: {source}")]
    NotACidr {
        /// The flag's value.
        range: String,
        /// Why.
        source: ipnet::AddrParseError,
    },
    /// Fewer than two host bits.
    #[error("{0:?} is too small: it holds no assignable address")]
    TooSmall(String),
}

impl std::str::FromStr for ServiceIpRange {
    type Err = ServiceIpRangeError;

    /// One CIDR, e.g. `10.96.0.0/12` or `fd00:10:96::/108` (this server is single-stack; a
    /// second, dual-stack CIDR is refused).
    fn from_str(s: &str) -> Result<Self, ServiceIpRangeError> {
        if s.contains(',') {
            return Err(ServiceIpRangeError::DualStack(s.to_string()));
        }
        let net: IpNet = s
            .trim()
            .parse()
            .map_err(|source| ServiceIpRangeError::NotACidr {
                range: s.to_string(),
                source,
            })?;
        // Kubernetes refuses ranges too small to hold a Service, and IPv6 ranges above /108
        // bits of hosts (its bitmap's limit; kept so configurations carry over).
        let host_bits = net.max_prefix_len() - net.prefix_len();
        if host_bits < 2 {
            return Err(ServiceIpRangeError::TooSmall(s.to_string()));
        }
        Ok(Self { net: net.trunc() })
    }
}

impl ServiceIpRange {
    /// `IPv4` or `IPv6`, as `spec.ipFamilies` names it.
    pub fn family(&self) -> &'static str {
        match self.net {
            IpNet::V4(_) => "IPv4",
            IpNet::V6(_) => "IPv6",
        }
    }

    /// The first assignable address (`10.96.0.1`), the `kubernetes` Service's in Kubernetes.
    pub fn first(&self) -> IpAddr {
        self.nth(1)
    }

    /// Whether `ip` is assignable from this range (the network's own address and, for IPv4,
    /// its broadcast address are not).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.net.contains(&ip) && ip != self.net.network() && ip != self.last_address()
    }

    fn last_address(&self) -> IpAddr {
        match self.net {
            IpNet::V4(n) => n.broadcast().into(),
            // IPv6 has no broadcast; Kubernetes still leaves the last address out.
            IpNet::V6(n) => n.broadcast().into(),
        }
    }

    /// How many addresses can be assigned.
    fn size(&self) -> u128 {
        let host_bits = u32::from(self.net.max_prefix_len() - self.net.prefix_len());
        (1u128 << host_bits.min(127)) - 2
    }

    /// The address at `offset` from the network's own address.
    fn nth(&self, offset: u128) -> IpAddr {
        match self.net.network() {
            IpAddr::V4(base) => IpAddr::V4((u32::from(base).wrapping_add(offset as u32)).into()),
            IpAddr::V6(base) => IpAddr::V6((u128::from(base).wrapping_add(offset)).into()),
        }
    }

    /// The addresses to try for a new Service, in order: random ones above the lower band
    /// Kubernetes keeps for addresses chosen by hand (1/16 of the range, 16 to 256), then every
    /// address from the start.
    fn candidates(&self) -> impl Iterator<Item = IpAddr> + '_ {
        let size = self.size();
        let reserved = (size / 16).clamp(16, 256).min(size / 2);
        let upper = size - reserved;
        let random = (0..RANDOM_TRIES).map(move |_| {
            let pick = rand::random::<u128>() % upper.max(1);
            self.nth(1 + reserved + pick)
        });
        // A range of more than 2^20 addresses is not walked: when 32 random tries found none
        // free, it is full in practice.
        let walk = (1..=size.min(1 << 20)).map(|offset| self.nth(offset));
        random.chain(walk)
    }
}

/// Claims and releases cluster IPs as `IPAddress` objects in the registry.
#[derive(Debug, Clone)]
pub struct ClusterIpAllocator {
    range: ServiceIpRange,
    addresses: RegistryStore,
}

/// Why no address could be claimed.
#[derive(Debug)]
pub enum AllocationError {
    /// The requested address cannot be had (a field error on `spec.clusterIPs[0]`).
    Field(FieldError),
    /// The range is full, or the registry failed (500).
    Internal(StrategyError),
}

fn internal(reason: String) -> AllocationError {
    AllocationError::Internal(StrategyError {
        module: "builtin-services".into(),
        reason,
    })
}

fn scope(dry_run: bool) -> RequestScope {
    RequestScope {
        version: "v1".into(),
        dry_run,
        ..RequestScope::default()
    }
}

impl ClusterIpAllocator {
    /// An allocator over `range`, claiming in `addresses` (the `ipaddresses` store).
    pub fn new(range: ServiceIpRange, addresses: RegistryStore) -> Self {
        Self { range, addresses }
    }

    /// The range addresses come from.
    pub fn range(&self) -> ServiceIpRange {
        self.range
    }

    /// Claims `requested` (or, when `None`, a free address) for Service `namespace`/`name`;
    /// a dry run only checks. Answers the address in canonical form.
    pub async fn allocate(
        &self,
        namespace: &str,
        name: &str,
        requested: Option<&str>,
        dry_run: bool,
    ) -> Result<String, AllocationError> {
        let field = "spec.clusterIPs[0]";
        if let Some(text) = requested {
            let ip: IpAddr = text.parse().map_err(|_| {
                AllocationError::Field(FieldError::invalid(
                    field,
                    &json!(text),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ))
            })?;
            if !self.range.contains(ip) {
                return Err(AllocationError::Field(FieldError::invalid(
                    field,
                    &json!(text),
                    format!("failed to allocate IP {text}: the provided IP ({text}) is not in the valid range. The range of valid IPs is {}", self.range),
                )));
            }
            return match self.claim(ip, namespace, name, dry_run).await {
                Ok(true) => Ok(ip.to_string()),
                Ok(false) => Err(AllocationError::Field(FieldError::invalid(
                    field,
                    &json!(text),
                    format!("failed to allocate IP {text}: provided IP is already allocated"),
                ))),
                Err(e) => Err(internal(format!("failed to allocate IP {text}: {e}"))),
            };
        }
        for ip in self.range.candidates() {
            match self.claim(ip, namespace, name, dry_run).await {
                Ok(true) => return Ok(ip.to_string()),
                Ok(false) => continue,
                Err(e) => return Err(internal(format!("failed to allocate a serviceIP: {e}"))),
            }
        }
        Err(internal(
            "failed to allocate a serviceIP: range is full".into(),
        ))
    }

    /// Creates the `IPAddress` of `ip` for the Service; false when another holds it. A dry
    /// run answers whether it is free.
    async fn claim(
        &self,
        ip: IpAddr,
        namespace: &str,
        name: &str,
        dry_run: bool,
    ) -> Result<bool, Error> {
        let object = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": ip.to_string(),
                "labels": {
                    MANAGED_BY: ALLOCATOR,
                    "ipaddress.kubernetes.io/ip-family": self.range.family(),
                },
            },
            "spec": {"parentRef": parent_ref(namespace, name)},
        });
        match self.addresses.create(&scope(dry_run), object).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_already_exists() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the `IPAddress` of `ip` if Service `namespace`/`name` holds it (best effort:
    /// the repair pass of the `service-ip-repair` controller catches what this misses).
    pub async fn release(&self, ip: &str, namespace: &str, name: &str) {
        if ip.parse::<IpAddr>().is_err() {
            return;
        }
        let held = match self
            .addresses
            .get(&scope(false), ip, Default::default())
            .await
        {
            Ok(address) => address.pointer("/spec/parentRef") == Some(&parent_ref(namespace, name)),
            Err(_) => false,
        };
        if held {
            if let Err(e) = self
                .addresses
                .delete(&scope(false), ip, &DeleteOptions::default())
                .await
            {
                tracing::warn!(%ip, error = %e, "could not release a Service's cluster IP");
            }
        }
    }
}

/// The parentRef of a Service's address.
pub fn parent_ref(namespace: &str, name: &str) -> Value {
    json!({"group": "", "resource": "services", "namespace": namespace, "name": name})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_leaves_out_its_network_and_broadcast_addresses() {
        let range: ServiceIpRange = "10.96.0.0/12".parse().unwrap();
        assert_eq!(range.first().to_string(), "10.96.0.1");
        assert!(!range.contains("10.96.0.0".parse().unwrap()));
        assert!(!range.contains("10.111.255.255".parse().unwrap()));
        assert!(range.contains("10.111.255.254".parse().unwrap()));
        assert!(!range.contains("10.112.0.1".parse().unwrap()));
        assert_eq!(range.family(), "IPv4");
        let v6: ServiceIpRange = "fd00:10:96::/108".parse().unwrap();
        assert_eq!(v6.family(), "IPv6");
        assert_eq!(v6.first().to_string(), "fd00:10:96::1");
    }

    #[test]
    fn new_addresses_come_from_above_the_hand_picked_band_first() {
        let range: ServiceIpRange = "10.0.0.0/24".parse().unwrap();
        // 254 assignable addresses, the lower 16 kept for addresses chosen by hand.
        for ip in range.candidates().take(RANDOM_TRIES) {
            let IpAddr::V4(v4) = ip else { panic!() };
            assert!(v4.octets()[3] > 16 && v4.octets()[3] < 255, "{ip}");
        }
        // Then every address, in order.
        let walk: Vec<IpAddr> = range.candidates().skip(RANDOM_TRIES).collect();
        assert_eq!(walk.len(), 254);
        assert_eq!(walk[0].to_string(), "10.0.0.1");
    }

    #[test]
    fn bad_ranges_are_refused() {
        assert!("10.0.0.0/31".parse::<ServiceIpRange>().is_err());
        assert!("nonsense".parse::<ServiceIpRange>().is_err());
        assert!("10.96.0.0/12,fd00::/108".parse::<ServiceIpRange>().is_err());
        // A host address is truncated to its network, as Go's net.ParseCIDR does.
        assert_eq!(
            "10.96.3.4/12"
                .parse::<ServiceIpRange>()
                .unwrap()
                .to_string(),
            "10.96.0.0/12"
        );
    }
}
