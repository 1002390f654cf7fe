// The RDMA CM of this process: the connection-manager backend of the preload shim's ucma emulation
// (provider/shim/ucma_backend.h), speaking the IB CM (transport/cm/cm.h) over the device's QP1.
//
// One service per process, on the engine of the uroce device (UROCE_DEV, else uroce0). It is created by the
// first LISTEN or CONNECT, which opens the engine itself when librdmacm has not opened the device yet
// (librdmacm creates, binds and listens on ids before it opens a device), and it keeps that engine open
// until the process exits. Its state lives under the engine lock: the backend entry points (application
// threads) take the lock, act, and leave what goes on the wire to the engine's progress pass
// (Engine::set_pass_hook), which also receives MADs on QP1, fires the CM's timers and turns the CM's
// events into ucma events. Nothing blocks on the network; the one blocking call is the request to the
// host switch uroced (a local socket) when the process runs through it.
//
// Addresses: the device has one GID (its address). Through uroced (a bare `uroce run`, UROCE_PORT is the
// memif port of a uroced lease) the host's port spaces are uroced's: a listener binds and listens there,
// and a connection to ADDR:PORT goes to the GID of whichever process `cm lookup` names (127.0.0.1 is the
// host, each process has its own leased address); no listener is RDMA_CM_EVENT_REJECTED with status 8 at
// once, as a kernel CM's REJ 8 arrives. Without uroced the destination address is the peer's GID.
//
// Ends: at exit every open connection ends on the wire as a kernel ends them when the rdma_cm file closes
// (DREQ, REJ, DREP), and the process waits up to 1 s for its DREQs' DREPs so that its last frames are not
// lost in the memif ring. A process killed outright sends nothing: through uroced the host switch sends for
// it (tools/uroced/cm_track.h); on a direct memif pair the survivor's CM ends its connections when the
// link goes down (cm::CmAgent::link_lost). Counters: `uroce stats` "cm" (PassHook::counters).
#pragma once

namespace uroce::provider {

// Registers the backend with the shim if the shim is loaded (dlsym of UROCE_UCMA_SET_BACKEND_SYMBOL).
// Called once from the provider's constructor.
void register_cm_backend();

}  // namespace uroce::provider
