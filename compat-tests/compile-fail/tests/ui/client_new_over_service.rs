// kube: a client over a caller-built tower service stack.
use kube::Client;

struct MyServiceStack;

fn main() {
    let _client = Client::new(MyServiceStack, "default");
}
