//! GETs of whole collections, read as a stream and counted rather than held (a list of 10,000
//! objects is over 10 MB, past what the shared client reads into a string).

use std::time::Duration;

thread_local! {
    /// One agent per client thread, so its connection is kept alive across lists.
    static AGENT: ureq::Agent = match std::env::var("STRATEGY_HOST_CA_FILE") {
        Ok(ca) => strategy_host_e2e::secure::https_agent(std::path::Path::new(&ca), None)
            .expect("STRATEGY_HOST_CA_FILE names a readable PEM CA"),
        Err(_) => ureq::AgentBuilder::new().timeout(Duration::from_secs(120)).build(),
    };
}

/// Sends the GET (with `Accept: accept`, when given); the response whatever its code, its
/// body unread.
pub fn get(url: &str, accept: Option<&str>) -> anyhow::Result<ureq::Response> {
    let mut req = AGENT.with(|a| a.get(url));
    if let Some(accept) = accept {
        req = req.set("Accept", accept);
    }
    if let Ok(token) = std::env::var("STRATEGY_HOST_TOKEN") {
        req = req.set("Authorization", &format!("Bearer {token}"));
    }
    match req.call() {
        Ok(resp) | Err(ureq::Error::Status(_, resp)) => Ok(resp),
        Err(e) => Err(e.into()),
    }
}

/// GETs `url` and reads the body to its end; the status and how many bytes it had.
pub fn read(url: &str, accept: Option<&str>) -> anyhow::Result<(u16, u64)> {
    let resp = get(url, accept)?;
    let code = resp.status();
    let bytes = std::io::copy(&mut resp.into_reader(), &mut std::io::sink())?;
    Ok((code, bytes))
}
