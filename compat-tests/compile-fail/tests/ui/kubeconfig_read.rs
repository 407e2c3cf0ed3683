// kube: reading the kubeconfig file; in a guest the host has read it.
use kube::config::Kubeconfig;

fn main() {
    let _kubeconfig = Kubeconfig::read();
}
