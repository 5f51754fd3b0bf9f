//! NVMe log pages for device (NAND) write amplification: media bytes
//! written divided by host bytes written, read before and after a run.
//!
//! - Host bytes: SMART / Health Information log (0x02), Data Units Written,
//!   bytes 48–63, in thousands of 512-byte units (NVMe Base Spec 2.0,
//!   Figure 207).
//! - Media bytes, preferred: OCP Datacenter NVMe SSD Spec 2.0, SMART /
//!   Health Information Extended log (0xC0), Physical Media Units Written,
//!   bytes 0–15, in bytes; valid only if the Log Page GUID at bytes 496–511
//!   is AFD514C9-7C6F-4F9C-A4F2-BFEA2810AFC5 (stored little-endian).
//! - Media bytes, else: Endurance Group Information log (0x09), Media Units
//!   Written, bytes 80–95, in thousands of 512-byte units (NVMe Base Spec
//!   2.0, Figure 210).
//!
//! The parsers are pure; [`read_counters`] issues Get Log Page through the
//! admin ioctl.

use std::fs::File;
use std::path::PathBuf;

use super::sys::{LogPageError, nvme_get_log_page};

/// SMART / Health Information.
pub const SMART_LOG: u8 = 0x02;
/// Endurance Group Information.
pub const ENDURANCE_LOG: u8 = 0x09;
/// OCP SMART / Health Information Extended.
pub const OCP_SMART_LOG: u8 = 0xC0;
/// The 0xC0 log page GUID as stored (bytes 496–511).
pub const OCP_C0_GUID: [u8; 16] = [
    0xC5, 0xAF, 0x10, 0x28, 0xEA, 0xBF, 0xF2, 0xA4, 0x9C, 0x4F, 0x6F, 0x7C, 0xC9, 0x14, 0xD5, 0xAF,
];
/// Bytes in one NVMe "data unit" as counted by the logs (1000 × 512).
pub const DATA_UNIT_BYTES: u128 = 512_000;
/// Every log page read here is 512 bytes.
pub const LOG_LEN: usize = 512;

fn u128_at(page: &[u8], at: usize) -> Result<u128, String> {
    let bytes: [u8; 16] = page
        .get(at..at + 16)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("log page of {} bytes, expected {LOG_LEN}", page.len()))?;
    Ok(u128::from_le_bytes(bytes))
}

/// Host bytes written, from a SMART log (0x02).
pub fn smart_host_bytes_written(page: &[u8]) -> Result<u128, String> {
    Ok(u128_at(page, 48)?.saturating_mul(DATA_UNIT_BYTES))
}

/// Media bytes written, from an Endurance Group log (0x09).
pub fn endurance_media_bytes_written(page: &[u8]) -> Result<u128, String> {
    Ok(u128_at(page, 80)?.saturating_mul(DATA_UNIT_BYTES))
}

/// Media bytes written, from the OCP log (0xC0), after checking its GUID.
pub fn ocp_media_bytes_written(page: &[u8]) -> Result<u128, String> {
    let guid = page
        .get(496..512)
        .ok_or_else(|| format!("log page of {} bytes, expected {LOG_LEN}", page.len()))?;
    if guid != OCP_C0_GUID {
        return Err(
            "log page 0xC0 is not the OCP SMART extended log (its GUID does not match)".into(),
        );
    }
    u128_at(page, 0)
}

/// Host and media bytes written, as the device counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeCounters {
    /// SMART Data Units Written, in bytes.
    pub host_bytes: u128,
    /// Media bytes written.
    pub media_bytes: u128,
    /// Which log the media bytes came from.
    pub media_source: &'static str,
}

fn describe(lid: u8, e: LogPageError) -> String {
    match e {
        LogPageError::Status(status) => {
            format!("log page {lid:#04x} not supported by the controller (NVMe status {status:#x})")
        }
        LogPageError::Io(e) => format!("Get Log Page {lid:#04x} failed: {e}"),
    }
}

fn read_log(device: &File, lid: u8, lsi: u16) -> Result<Vec<u8>, String> {
    let mut page = vec![0u8; LOG_LEN];
    nvme_get_log_page(device, lid, lsi, &mut page).map_err(|e| describe(lid, e))?;
    Ok(page)
}

/// Reads the counters of an NVMe namespace device (`/dev/nvmeXnY`).
pub fn read_counters(device: &File) -> Result<NvmeCounters, String> {
    let host_bytes = smart_host_bytes_written(&read_log(device, SMART_LOG, 0)?)?;
    let ocp = read_log(device, OCP_SMART_LOG, 0).and_then(|p| ocp_media_bytes_written(&p));
    let (media_bytes, media_source) = match ocp {
        Ok(bytes) => (bytes, "OCP log 0xC0 Physical Media Units Written"),
        Err(ocp_why) => match read_log(device, ENDURANCE_LOG, 1)
            .and_then(|p| endurance_media_bytes_written(&p))
        {
            Ok(bytes) => (bytes, "Endurance Group log 0x09 Media Units Written"),
            Err(eg_why) => return Err(format!("no media counter: {ocp_why}; {eg_why}")),
        },
    };
    Ok(NvmeCounters {
        host_bytes,
        media_bytes,
        media_source,
    })
}

/// The NVMe namespace device under `whole_disk` (a sysfs block directory),
/// or why there is none.
pub fn namespace_device(whole_disk: Option<PathBuf>) -> Result<PathBuf, String> {
    let disk = whole_disk.ok_or("no block device under the target")?;
    let name = disk
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.starts_with("nvme") {
        return Err(format!("no NVMe device ({name} is not NVMe)"));
    }
    Ok(PathBuf::from("/dev").join(name))
}

#[cfg(test)]
mod tests {
    //! The pages here are built byte by byte from the specifications'
    //! layouts (offsets in the module comment): this host has no NVMe
    //! device, so no real page could be captured.
    use super::*;

    fn page() -> Vec<u8> {
        vec![0u8; LOG_LEN]
    }

    #[test]
    fn smart_data_units_written_are_thousands_of_512_bytes() {
        let mut p = page();
        // Data Units Written = 0x0102_0304 at bytes 48..64, little-endian.
        p[48..52].copy_from_slice(&[0x04, 0x03, 0x02, 0x01]);
        // Data Units Read (bytes 32..48) must not leak in.
        p[32] = 0xFF;
        assert_eq!(
            smart_host_bytes_written(&p).unwrap(),
            0x0102_0304u128 * 512_000
        );
        // A 128-bit counter past 2^64 is read whole.
        let mut p = page();
        p[56] = 1;
        assert_eq!(
            smart_host_bytes_written(&p).unwrap(),
            (1u128 << 64) * 512_000
        );
        assert!(
            smart_host_bytes_written(&p[..60])
                .unwrap_err()
                .contains("512")
        );
    }

    #[test]
    fn endurance_media_units_written_are_read_at_80() {
        let mut p = page();
        p[64] = 9; // Data Units Written of the group: not the media count
        p[80] = 0x10;
        p[81] = 0x27; // 10,000 units
        assert_eq!(endurance_media_bytes_written(&p).unwrap(), 10_000 * 512_000);
    }

    #[test]
    fn ocp_log_needs_its_guid() {
        let mut p = page();
        // Physical Media Units Written: 5 GiB, in bytes, at 0..16.
        p[0..16].copy_from_slice(&(5u128 << 30).to_le_bytes());
        p[16] = 0xAA; // Physical Media Units Read
        p[494] = 4; // log page version
        assert!(
            ocp_media_bytes_written(&p)
                .unwrap_err()
                .contains("GUID does not match")
        );
        // The GUID AFD514C9-7C6F-4F9C-A4F2-BFEA2810AFC5 as a little-endian u128.
        p[496..512].copy_from_slice(&0xAFD5_14C9_7C6F_4F9C_A4F2_BFEA_2810_AFC5u128.to_le_bytes());
        assert_eq!(&p[496..512], &OCP_C0_GUID);
        assert_eq!(ocp_media_bytes_written(&p).unwrap(), 5u128 << 30);
    }

    #[test]
    fn non_nvme_disks_say_so() {
        assert_eq!(
            namespace_device(Some(PathBuf::from("/sys/devices/virtual/block/vda"))).unwrap_err(),
            "no NVMe device (vda is not NVMe)"
        );
        assert_eq!(
            namespace_device(Some(PathBuf::from("/sys/devices/pci/nvme/nvme0/nvme0n1"))).unwrap(),
            PathBuf::from("/dev/nvme0n1")
        );
    }
}
